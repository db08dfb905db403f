#!/usr/bin/env bash
# Runs every shell block of README.md as written, in order, so the README's flows cannot drift from what the
# code does: a command the README shows either works on a fresh clone or fails CI.
#
#   bash scripts/readme-flows.sh               run README.md's blocks from the repository root
#   bash scripts/readme-flows.sh --list        show what would run, be written or be skipped, run nothing
#   bash scripts/readme-flows.sh --self-test   check this script on small made-up documents (no Swift needed)
#
# What counts as what, in the Markdown file:
# - A fence whose language is sh, bash or shell is run, with `bash -euo pipefail`, from the run directory.
#   All blocks run in one order in separate shells, so a later block can use files an earlier one made.
# - A fence with `title=NAME` in its info string (```text title=perf.budget) is a file the README shows: it is
#   written to NAME in the run directory when reached, so the blocks after it can use it.
# - Every other fence (swift, plain, yaml without a title) is shown, not run.
# - Skipped: a shell block holding the README's test command, "bash scripts/install-deps.sh && swift test && swift test --package-path Adapters/NIO".
#   CI runs that line itself just before this script (.ci/run); running it again here would double CI's time.
#   Both copies must stay identical: this script fails when .ci/run no longer has that exact line.
#
# Strictness: `bash -e` lets `a && b` pass when `a` fails, so each complete command of a block (a line, or
# lines joined by `\`, open quotes or an open `if`/`for`) is followed by a check of its status. A failure
# names the Markdown line and the command.
#
# Clean-up: files, folders and LTTng sessions the blocks create are removed afterwards when the blocks' text
# names them and they did not exist before, so nothing else in a shared working tree is touched; a name the
# blocks use that already exists (say an old baseline.json) stops the run before anything runs, rather than
# being overwritten or read by mistake.
#
# PATH: blocks run with the repository's .build/release first on PATH, as the README's set-up command puts it
# there for the reader's shell (each block runs in a shell of its own, so the README's `export` cannot carry over).
#
# Environment: README_FLOWS_FILE (the Markdown file, default README.md, or a guide under docs/), README_FLOWS_DIR (where blocks run,
# default the repository root), README_FLOWS_TIMEOUT (seconds per block, default 1800: the first block builds
# rlctl in release mode), GITHUB_STEP_SUMMARY (set to a temporary file when unset, as the CI example appends
# to it).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
self="$repo/scripts/$(basename "${BASH_SOURCE[0]}")"
ci_test_command='bash scripts/install-deps.sh && swift test && swift test --package-path Adapters/NIO'

die() { echo "readme-flows: $*" >&2; exit 1; }

# ---------- extraction ----------

# Splits the Markdown file "$1" into items in the folder "$2" ("$3" names the file in messages): NNN.body and
# NNN.meta, "kind line [name]", where kind is run, skip or file and line is the block's first content line.
extract() {
    local path=$1 out=$2 markdown=$3
    local number=0 line_number=0 in_block=0 fence="" indent=0 kind="" name="" start=0 info language line
    while IFS= read -r line || [ -n "$line" ]; do
        line_number=$((line_number + 1))
        if [ $in_block -eq 0 ]; then
            # CommonMark: an opening fence is indented by at most three spaces.
            if [[ $line =~ ^(\ {0,3})(\`{3,})(.*)$ ]]; then
                indent=${#BASH_REMATCH[1]}
                fence=${BASH_REMATCH[2]}
                info=${BASH_REMATCH[3]}
                language=""
                read -r language _ <<<"$info" || true
                name=""
                if [[ $info =~ (^|[[:space:]])title=([^[:space:]]+) ]]; then name=${BASH_REMATCH[2]}; fi
                case "$language" in
                    sh | bash | shell) kind=run ;;
                    *) kind=show ;;
                esac
                if [ -n "$name" ]; then
                    [ "$kind" = run ] && die "$markdown:$line_number: a shell block with title=$name: is it a file to write or commands to run? (use another language for files)"
                    case "$name" in
                        /* | *..* ) die "$markdown:$line_number: title=$name must be a relative path inside the run directory" ;;
                    esac
                    kind=file
                fi
                in_block=1
                start=$((line_number + 1))
                number=$((number + 1))
                : >"$out/$(printf %03d $number).body"
            fi
        else
            if [[ $line =~ ^\ {0,3}(\`{3,})[[:space:]]*$ ]] && [ ${#BASH_REMATCH[1]} -ge ${#fence} ]; then
                in_block=0
                local base
                base="$out/$(printf %03d $number)"
                if [ "$kind" = run ] && grep -qxF -- "$ci_test_command" "$base.body"; then kind=skip; fi
                if [ "$kind" = show ]; then
                    rm -f "$base.body"
                else
                    printf '%s %d %s\n' "$kind" "$start" "$name" >"$base.meta"
                fi
                continue
            fi
            # Content lines lose up to the opening fence's indentation, as CommonMark renders them.
            local strip=$indent
            while [ $strip -gt 0 ] && [ "${line:0:1}" = " " ]; do line=${line:1}; strip=$((strip - 1)); done
            printf '%s\n' "$line" >>"$out/$(printf %03d $number).body"
        fi
    done <"$path"
    [ $in_block -eq 0 ] || die "$markdown:$((start - 1)): the code block opened here is never closed"
}

# Turns one shell block into a script that runs each complete command and checks its status.
# "$1" the block, "$2" the Markdown line of its first line, "$3" the Markdown file (for messages); the script
# names the file from README_FLOWS_NAME, so no file name is ever pasted into shell code.
instrument() {
    local body=$1 first=$2 markdown=$3
    local chunk="" chunk_start=0 line_number=$((first - 1)) line
    printf '%s\n' "__rf_fail() { __rf_reported=1; printf 'readme-flows: %s:%s: failed (exit %s): %s\n' \"\$README_FLOWS_NAME\" \"\$1\" \"\$2\" \"\$3\" >&2; exit \"\$2\"; }"
    printf '%s\n' "__rf_at=0; __rf_text=''; __rf_reported=''"
    # A failing simple command ends the shell through -e before the status check runs: the ERR trap says where.
    printf '%s\n' "trap '__rf_fail \"\$__rf_at\" \"\$?\" \"\$__rf_text\"' ERR"
    # -u and syntax errors end the shell without the ERR trap.
    printf '%s\n' "trap '__rf_s=\$?; [ \$__rf_s -eq 0 ] || [ -n \"\$__rf_reported\" ] || printf \"readme-flows: %s:%s: failed (exit %s): %s\\n\" \"\$README_FLOWS_NAME\" \"\$__rf_at\" \"\$__rf_s\" \"\$__rf_text\" >&2' EXIT"
    while IFS= read -r line || [ -n "$line" ]; do
        line_number=$((line_number + 1))
        if [ -z "$chunk" ]; then
            # Blank and comment-only lines are not commands.
            [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
            chunk_start=$line_number
            chunk=$line
        else
            chunk+=$'\n'"$line"
        fi
        [[ $line == *\\ ]] && continue
        local errors
        errors=$(bash -n -c "$chunk" 2>&1 >/dev/null) || continue
        [ -z "$errors" ] || continue
        local text=${chunk//\'/\'\\\'\'}
        printf '%s\n' "__rf_at=$chunk_start; __rf_text='$text'"
        printf '%s\n' "$chunk"
        printf '%s\n' "__rf_status=\$?; [ \$__rf_status -eq 0 ] || __rf_fail $chunk_start \$__rf_status '$text'"
        chunk=""
    done <<<"$body"
    [ -z "$chunk" ] || die "$markdown:$chunk_start: this command is never completed (an open quote, \`if\` or \\ at the end?)"
}

# The names read from stdin (top-level files and folders, LTTng sessions), one per line, that the blocks'
# text "$1" mentions as a word.
mentioned() {
    local texts=$1 candidate
    while IFS= read -r candidate; do
        [ -n "$candidate" ] && grep -qwF -- "$candidate" "$texts" && printf '%s\n' "$candidate"
    done
    return 0
}

top_level() { (cd "$1" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort); }

lttng_sessions() {
    command -v lttng >/dev/null || return 0
    # "  1) demo (/path) [inactive]": the session names; no daemon means no session.
    # (`lttng list` fails without a daemon: under pipefail that is not a failure of the run.)
    { lttng list 2>/dev/null || true; } | sed -n 's/^ *[0-9][0-9]*) \([^ ]*\) .*/\1/p' | sort
}

# ---------- paths ----------

# Every link of the Markdown file "$1" that is not a web address, and every `path` in backticks that starts
# with a folder of this repository, must name something in the repository: a reader who follows one must not
# land outside it (a ../ path) or on nothing. "$2" names the file in messages.
check_paths() {
    local path=$1 markdown=$2 base bad=0 target resolved
    base=$(dirname "$path")
    while IFS= read -r target; do
        case $target in http://* | https://* | mailto:* | \#*) continue ;; esac
        target=${target%%#*}
        resolved=$(realpath -m -- "$base/$target")
        if [[ $resolved != "$repo"/* ]]; then
            echo "readme-flows: $markdown links to $target, outside the repository" >&2; bad=1
        elif [ ! -e "$resolved" ]; then
            echo "readme-flows: $markdown links to $target, which does not exist" >&2; bad=1
        fi
    done < <(grep -oE '\]\([^)[:space:]]+\)' "$path" | sed 's/^](\(.*\))$/\1/')
    while IFS= read -r target; do
        if [ ! -e "$repo/$target" ]; then
            echo "readme-flows: $markdown names \`$target\`, which does not exist in the repository" >&2; bad=1
        fi
    done < <(grep -oE '`(\.ci|Benchmarks|Examples|Sources|Tests|docs|scripts)/[^`[:space:]]*`' "$path" | tr -d '`' | sort -u)
    local outside
    outside=$(grep -nE '(^|[^.])\.\./' "$path" || true)
    if [ -n "$outside" ]; then
        sed "s|^\([0-9]*\):|readme-flows: $markdown:\1: |; s|\$| (a path outside the repository)|" <<<"$outside" >&2; bad=1
    fi
    [ $bad -eq 0 ] || die "$markdown: fix the paths above"
}

# ---------- running ----------

# run_flows <Markdown file> <its name in messages> <run folder> <run|list>
run_flows() {
    local path=$1 markdown=$2 dir=$3 mode=$4
    [ -f "$path" ] || die "$markdown: no such file"
    [ -d "$dir" ] || die "$dir: no such folder"
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/readme-flows.XXXXXX")
    # The EXIT trap runs after this function's locals are gone: what clean-up needs is global.
    __rf_work=$work __rf_armed=""
    trap cleanup EXIT
    local items="$work/items"
    mkdir "$items"
    extract "$path" "$items" "$markdown"

    check_paths "$path" "$markdown"

    local metas=("$items"/*.meta)
    [ -e "${metas[0]}" ] || die "$markdown: no shell block and no file block: nothing to check"

    if [ "$mode" = list ]; then
        local meta kind start name
        for meta in "${metas[@]}"; do
            read -r kind start name <"$meta"
            case $kind in
                run) printf 'run   %s:%s  %s\n' "$markdown" "$start" "$(grep -v '^[[:space:]]*\(#.*\)\{0,1\}$' "${meta%.meta}.body" | head -n 1)" ;;
                skip) printf 'skip  %s:%s  (the test command CI runs itself)\n' "$markdown" "$start" ;;
                file) printf 'file  %s:%s  %s\n' "$markdown" "$start" "$name" ;;
            esac
        done
        return 0
    fi

    # Everything the blocks say, to tell their own leftovers from anything else in the folder.
    cat "$items"/*.body >"$work/texts"
    grep -h '^file ' "$items"/*.meta | awk '{print $3}' >>"$work/texts" || true

    local before_entries before_sessions
    before_entries=$(top_level "$dir")
    before_sessions=$(lttng_sessions)
    local entry clashes=()
    while IFS= read -r entry; do
        case $entry in .build | .build-* | .build_* | .git) continue ;; esac
        git -C "$dir" ls-files --error-unmatch -- "$entry" >/dev/null 2>&1 && continue
        clashes+=("$entry")
    done < <(mentioned "$work/texts" <<<"$before_entries")
    while IFS= read -r entry; do clashes+=("LTTng session $entry"); done < <(mentioned "$work/texts" <<<"$before_sessions")
    if [ ${#clashes[@]} -gt 0 ]; then
        die "these already exist and the blocks of $markdown make or use them: ${clashes[*]} (move them away or destroy them first)"
    fi

    __rf_dir=$dir __rf_before_entries=$before_entries __rf_before_sessions=$before_sessions __rf_armed=1

    local own_summary=""
    if [ -z "${GITHUB_STEP_SUMMARY:-}" ]; then
        export GITHUB_STEP_SUMMARY="$work/step-summary.md"
        : >"$GITHUB_STEP_SUMMARY"
        own_summary=$GITHUB_STEP_SUMMARY
    fi
    local timeout_seconds=${README_FLOWS_TIMEOUT:-1800}

    local meta kind start name total_start=$SECONDS ran=0 skipped=0 written=0 report=()
    for meta in "${metas[@]}"; do
        read -r kind start name <"$meta"
        local body="${meta%.meta}.body"
        case $kind in
            skip)
                echo "== $markdown:$start: skipped, CI runs it itself: $ci_test_command"
                skipped=$((skipped + 1))
                report+=("skip  $markdown:$start")
                ;;
            file)
                echo "== $markdown:$start: writing $name"
                mkdir -p "$(dirname "$dir/$name")"
                cp "$body" "$dir/$name"
                written=$((written + 1))
                ;;
            run)
                echo "== $markdown:$start"
                sed 's/^/   | /' "$body"
                local script="$work/block-$start.sh"
                instrument "$(cat "$body")" "$start" "$markdown" >"$script"
                local block_start=$SECONDS status=0
                # No terminal input: a command that would prompt fails instead of waiting for the timeout.
                (cd "$dir" && PATH="$repo/.build/release:$PATH" README_FLOWS_NAME=$markdown timeout -k 10 "$timeout_seconds" \
                    bash -euo pipefail "$script" </dev/null) || status=$?
                local took=$((SECONDS - block_start))
                if [ $status -ne 0 ]; then
                    [ $status -eq 124 ] && echo "readme-flows: $markdown:$start: the block took longer than ${timeout_seconds}s" >&2
                    echo "readme-flows: FAILED: the block at $markdown:$start (exit $status, ${took}s)" >&2
                    exit 1
                fi
                ran=$((ran + 1))
                report+=("ok    $markdown:$start  ${took}s")
                ;;
        esac
    done
    # Nobody else shows what the blocks wrote to the job summary (the CI example's comparison): the log does.
    if [ -n "$own_summary" ] && [ -s "$own_summary" ]; then
        echo "== what the blocks wrote to \$GITHUB_STEP_SUMMARY:"
        cat "$own_summary"
    fi
    echo "== readme-flows: $ran block(s) passed, $skipped skipped, $written file(s) written, $((SECONDS - total_start))s"
    printf '   %s\n' "${report[@]}"
}

cleanup() {
    local status=$? entry after
    if [ -z "$__rf_armed" ]; then
        rm -rf "$__rf_work"
        exit $status
    fi
    after=$(top_level "$__rf_dir")
    while IFS= read -r entry; do
        [ -z "$entry" ] && continue
        grep -qxF -- "$entry" <<<"$__rf_before_entries" && continue
        case $entry in .build | .build-* | .build_* | .git) continue ;; esac
        rm -rf -- "${__rf_dir:?}/$entry"
    done < <(mentioned "$__rf_work/texts" <<<"$after")
    while IFS= read -r entry; do
        [ -z "$entry" ] && continue
        grep -qxF -- "$entry" <<<"$__rf_before_sessions" && continue
        lttng destroy "$entry" >/dev/null 2>&1 || echo "readme-flows: could not destroy the LTTng session $entry" >&2
    done < <(lttng_sessions | mentioned "$__rf_work/texts")
    rm -rf "$__rf_work"
    exit $status
}

# ---------- self-test ----------

# Runs this script on made-up documents and checks that it passes what works and fails what does not, at the
# right line. Needs only bash and coreutils.
self_test() {
    # Global: the EXIT trap runs after this function's locals are gone.
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/readme-flows-selftest.XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    local failures=0
    expect() { # expect <description> <wanted status: pass|fail> <text the output must contain or ""> <doc>
        local description=$1 wanted=$2 needle=$3 doc=$4 output status=0
        mkdir -p "$scratch/dir"
        printf '%s' "$doc" >"$scratch/doc.md"
        output=$(cd "$scratch" && README_FLOWS_FILE=doc.md README_FLOWS_DIR="$scratch/dir" README_FLOWS_TIMEOUT=20 \
            GITHUB_STEP_SUMMARY="" bash "$self" 2>&1) || status=$?
        local got=pass leftovers
        [ $status -eq 0 ] || got=fail
        leftovers=$(ls -A "$scratch/dir")
        if [ -n "$leftovers" ]; then
            echo "self-test FAILED: $description: the blocks' files were left behind: $leftovers" >&2
            failures=$((failures + 1))
        fi
        if [ "$got" != "$wanted" ] || { [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$output"; }; then
            echo "self-test FAILED: $description: wanted $wanted${needle:+ with \"$needle\"}, got $got (exit $status):" >&2
            sed 's/^/    /' <<<"$output" >&2
            failures=$((failures + 1))
        else
            echo "self-test ok: $description"
        fi
        rm -rf "$scratch/dir"
    }
    local fence='```'

    expect "blocks run in order, files are written, leftovers are removed" pass "2 block(s) passed, 1 skipped, 1 file(s) written" "# Doc
$fence text title=greeting.txt
hello
$fence

$fence sh
# a comment, then a command split over lines
grep -q hello greeting.txt && \\
    cp greeting.txt copy.txt
if [ -f copy.txt ]; then
    echo \"copied\"
fi
$fence

$fence swift
this is not run
$fence

$fence bash
test -f copy.txt   # made by the block before
echo summary >> \"\$GITHUB_STEP_SUMMARY\"
$fence

$fence sh
$ci_test_command
$fence
"

    expect "a failing command fails the run, naming its line and text" fail "doc.md:5: failed (exit 3): (exit 3)" "one
$fence sh
true
# two
(exit 3)
echo never
$fence
"
    expect "a failure before && is not lost" fail "doc.md:3: failed (exit 1): false && echo no" "x
$fence sh
false && echo no
echo never
$fence
"
    expect "pipefail holds" fail "doc.md:2: failed" "$fence sh
false | cat
$fence
"
    expect "an unset variable fails" fail "doc.md:2: failed" "$fence sh
echo \"\$README_FLOWS_UNSET_VARIABLE\"
$fence
"
    expect "an unclosed block is an error" fail "the code block opened here is never closed" "a
$fence sh
echo open
"
    expect "an incomplete command is an error" fail "doc.md:2: this command is never completed" "$fence sh
echo 'open quote
$fence
"
    expect "a document with nothing to run is an error" fail "nothing to check" "text only
$fence swift
let x = 1
$fence
"
    expect "a link out of the repository is an error" fail "links to ../elsewhere.md, outside the repository" "See [the rules](../elsewhere.md).
$fence sh
true
$fence
"
    expect "a named repository path that does not exist is an error" fail "names \`docs/no-such-file.md\`, which does not exist" "See \`docs/no-such-file.md\` and \`docs/semantics.md\`.
$fence sh
true
$fence
"
    expect "a ../ path in a command is an error" fail "doc.md:2: cat ../shared/notes.md (a path outside the repository)" "$fence sh
cat ../shared/notes.md
$fence
"
    mkdir -p "$scratch/dir"
    : >"$scratch/dir/made.txt"
    local output status=0
    printf '%s sh\ntouch made.txt\n%s\n' "$fence" "$fence" >"$scratch/doc.md"
    output=$(cd "$scratch" && README_FLOWS_FILE=doc.md README_FLOWS_DIR="$scratch/dir" bash "$self" 2>&1) || status=$?
    if [ $status -ne 0 ] && grep -qF "made.txt" <<<"$output" && [ -f "$scratch/dir/made.txt" ]; then
        echo "self-test ok: a file the blocks make that exists already stops the run and is kept"
    else
        echo "self-test FAILED: an existing made.txt was not reported (exit $status): $output" >&2
        failures=$((failures + 1))
    fi
    rm -rf "$scratch/dir"

    # The README itself: the CI test command is skipped in exactly one block, and .ci/run runs that same line.
    local plan
    plan=$(cd "$repo" && bash "$self" --list)
    [ "$(grep -c '^skip ' <<<"$plan")" -eq 1 ] \
        || { echo "self-test FAILED: README.md should have exactly one block with the test command:" >&2; echo "$plan" >&2; failures=$((failures + 1)); }
    grep -qxF -- "$ci_test_command" "$repo/.ci/run" \
        || { echo "self-test FAILED: .ci/run does not run the README's test command \"$ci_test_command\"" >&2; failures=$((failures + 1)); }

    [ $failures -eq 0 ] || die "self-test: $failures check(s) failed"
    echo "readme-flows: self-test passed"
}

if [ -n "${README_FLOWS_FILE:-}" ]; then
    markdown_path=$(realpath -- "$README_FLOWS_FILE") markdown_name=$README_FLOWS_FILE
else
    markdown_path="$repo/README.md" markdown_name=README.md
    # Skipping the test command is only right while CI runs that very line itself.
    grep -qxF -- "$ci_test_command" "$repo/.ci/run" \
        || die ".ci/run no longer runs \"$ci_test_command\", the README's test command this script skips"
fi
run_dir=$(realpath -- "${README_FLOWS_DIR:-$repo}")

case "${1:-}" in
    --self-test) self_test ;;
    --list) run_flows "$markdown_path" "$markdown_name" "$run_dir" list ;;
    "") run_flows "$markdown_path" "$markdown_name" "$run_dir" run ;;
    *) die "unknown argument $1 (use --list or --self-test, or nothing)" ;;
esac

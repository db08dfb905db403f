// A Go loop for `rlctl record --any`: a 5 ms ticker until the duration in argv[1] ends (then a clean exit), or a
// signal ends it. Importing net links it against libc (cgo's resolver), so the interposer loads, yet Go's runtime
// waits with raw epoll_pwait system calls and ends by exit_group: the interposer sees neither.
package main

import (
	"net"
	"os"
	"time"
)

func main() {
	_ = net.IPv4len
	d, _ := time.ParseDuration(os.Args[1])
	t := time.NewTicker(5 * time.Millisecond)
	end := time.After(d)
	for {
		select {
		case <-t.C:
		case <-end:
			return
		}
	}
}

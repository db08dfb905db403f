// An HTTP server on Node's own loop, for `rlctl record --any`'s tests and the README: every BURN_EVERY ms a
// timer burns BURN ms of CPU on the loop (a stall rlctl must find), and GET /burn?ms=N burns N ms when asked. It runs for SECONDS, then writes what
// Node's own meter says, performance.eventLoopUtilization() over the loop's whole life, to REPORT (JSON) and exits.
// SIGUSR2 marks a window (first: its start, second: its end), whose own utilization is reported too: what a test
// compares with `rlctl record --pid`, attached for that window only.
// The burns stop half an interval before the end: a burn in the iteration that exits would never be followed by
// a wait, so nobody (rlctl or anyone else watching the waits) could say how long that iteration was.
//
//     node node-server.js PORT SECONDS BURN_EVERY_MS BURN_MS REPORT
const http = require('http');
const fs = require('fs');
const { performance } = require('perf_hooks');

const [port, seconds, burnEvery, burnMs, report] = process.argv.slice(2);
if (!report) {
    console.error('usage: node node-server.js PORT SECONDS BURN_EVERY_MS BURN_MS REPORT');
    process.exit(2);
}

let requests = 0;
let requestedBurns = 0;
const server = http.createServer((request, response) => {
    requests += 1;
    // GET /burn?ms=N burns N ms on the loop before answering: a stall a test asks for when it is ready to see it.
    const burn = /^\/burn\?ms=(\d+)$/.exec(request.url);
    if (burn) {
        const until = performance.now() + Number(burn[1]);
        while (performance.now() < until) {}
        requestedBurns += 1;
    }
    response.end('hello\n');
});

let windowStart = null, windowUtilization = null;
process.on('SIGUSR2', () => {
    if (windowStart === null) windowStart = performance.eventLoopUtilization();
    else if (windowUtilization === null) windowUtilization = performance.eventLoopUtilization(windowStart).utilization;
});

let burns = 0;
const burner = setInterval(() => {
    const until = performance.now() + Number(burnMs);
    while (performance.now() < until) {}
    burns += 1;
}, Number(burnEvery));

server.listen(Number(port), '127.0.0.1', () => {
    console.log(`listening on 127.0.0.1:${port}`);
});

setTimeout(() => clearInterval(burner), Number(seconds) * 1000 - Number(burnEvery) / 2);

setTimeout(() => {
    const elu = performance.eventLoopUtilization();
    fs.writeFileSync(report, JSON.stringify({
        utilization: elu.utilization, window_utilization: windowUtilization, active_ms: elu.active, idle_ms: elu.idle, burns, requestedBurns, requests, pid: process.pid,
    }) + '\n');
    server.close();
    process.exit(0);
}, Number(seconds) * 1000);

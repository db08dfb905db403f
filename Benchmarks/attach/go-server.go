// A Go HTTP server for the attach benchmark and tests (Go's runtime waits with raw epoll_pwait calls, which no
// interposer sees): every EVERY-th request burns 40 ms of CPU in its handler (0: never), and GET /burn always does.
//
//	go-server PORT EVERY
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go-server PORT EVERY")
		os.Exit(2)
	}
	every, _ := strconv.ParseInt(os.Args[2], 10, 64)
	var requests int64
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/burn" || every > 0 && atomic.AddInt64(&requests, 1)%every == 0 {
			for start := time.Now(); time.Since(start) < 40*time.Millisecond; {
			}
		}
		fmt.Fprintln(w, "hello")
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Command echo is ingressbench's backend: a static HTTP/1.1 server on :8080 that answers every
// request with a short body naming the pod, the cheapest backend Go's HTTP stack gives, so the
// benchmark measures the proxies in front of it.
package main

import (
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	host, _ := os.Hostname()
	body := []byte("ok " + host + "\n")
	srv := &http.Server{
		Addr:              ":8080",
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		}),
	}
	log.Fatal(srv.ListenAndServe())
}

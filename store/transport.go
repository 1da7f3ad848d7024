package store

import (
	"net/http"
	"sync"

	"github.com/minio/minio-go/v7"
)

// transports holds one HTTP transport per kind of connection (plain, TLS
// with the system roots, TLS with a given CA file), shared by every Store of
// the process: a process serving many sites (the starter's colocated
// workers, a worker hosting several sites) reuses one pool of keep-alive
// connections instead of one pool per site identity, and
// CloseIdleConnections can reach them all.
var transports struct {
	sync.Mutex
	m map[string]*http.Transport
}

// sharedTransport returns the process's transport for key, made by mk on
// first use.
func sharedTransport(key string, mk func() (*http.Transport, error)) (*http.Transport, error) {
	transports.Lock()
	defer transports.Unlock()
	if tr, ok := transports.m[key]; ok {
		return tr, nil
	}
	tr, err := mk()
	if err != nil {
		return nil, err
	}
	// One pool serves every site identity of the process: keep enough idle
	// connections for a round's concurrent requests (minio-go keeps 16).
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, 64)
	if transports.m == nil {
		transports.m = map[string]*http.Transport{}
	}
	transports.m[key] = tr
	return tr, nil
}

// plainTransport is minio-go's default transport for secure or plain HTTP.
func plainTransport(secure bool) func() (*http.Transport, error) {
	return func() (*http.Transport, error) { return minio.DefaultTransport(secure) }
}

// CloseIdleConnections closes the idle keep-alive connections of every
// Store of this process. A process that runs the S3 server itself calls it
// before stopping the server, whose shutdown otherwise waits (up to ten
// seconds in versitygw) for the connections its own clients keep open.
func CloseIdleConnections() {
	transports.Lock()
	defer transports.Unlock()
	for _, tr := range transports.m {
		tr.CloseIdleConnections()
	}
}

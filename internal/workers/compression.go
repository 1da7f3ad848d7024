package workers

import (
	"net"

	"go.temporal.io/sdk/client"
)

// Compression returns the gRPC compression for a Temporal client dialling
// hostPort: none for a loopback address, gzip (the SDK's default) otherwise.
//
// Over loopback, compressing costs CPU on both ends and saves nothing: with
// the embedded stack, gzip of every request and reply was about 5 % of all
// the CPU a campaign used (make bench-pipeline profile). Across a network
// (a site worker at a hospital dialling a remote cluster) the smaller
// messages are worth it, so that keeps the default.
func Compression(hostPort string) client.GrpcCompression {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if host == "localhost" {
		return &client.GrpcCompressionNone{}
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return &client.GrpcCompressionNone{}
	}
	return &client.GrpcCompressionGzip{}
}

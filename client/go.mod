module github.com/sepp-io/sepp/client

go 1.26.0

require (
	github.com/sepp-io/sepp/internal v0.1.0
	github.com/sepp-io/sepp/proto v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261123191846-1e707ab9fbc2
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.63.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/sepp-io/sepp/internal => ../internal

replace github.com/sepp-io/sepp/proto => ../proto

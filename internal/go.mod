module github.com/sepp-io/sepp/internal

go 1.26.0

require (
	golang.org/x/net v0.63.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

// Package plugintest runs sepp's protoc plugins in their tests as protoc
// would: it builds the CodeGeneratorRequest of compiled proto files and
// reads the plugin's response back.
package plugintest

import (
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"
)

// Request is protoc's request for the files named in toGenerate: every file
// of files and its imports, imports first, each once; param is the plugin's
// option string (buf.gen.yaml's opt), "" for none.
func Request[F protoreflect.FileDescriptor](files []F, toGenerate []string, param string) *pluginpb.CodeGeneratorRequest {
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: toGenerate}
	if param != "" {
		req.Parameter = &param
	}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		for i := 0; i < f.Imports().Len(); i++ {
			add(f.Imports().Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(f))
	}
	for _, f := range files {
		add(f)
	}
	return req
}

// Files is the response's files by name. It fails t when the response
// carries an error or does not declare proto3 optional support, which
// protoc demands of a plugin given optional fields.
func Files(t *testing.T, resp *pluginpb.CodeGeneratorResponse) map[string]string {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("response error: %s", resp.GetError())
	}
	if resp.GetSupportedFeatures()&uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL) == 0 {
		t.Error("the response does not declare proto3 optional support")
	}
	out := map[string]string{}
	for _, f := range resp.File {
		out[f.GetName()] = f.GetContent()
	}
	return out
}

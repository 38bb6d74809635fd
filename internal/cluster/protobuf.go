package cluster

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// preferProtobuf makes skiff's own components talk protobuf to the API server, as upstream's do:
// smaller bodies and cheaper encoding and decoding on both sides. JSON stays acceptable, for
// the resources without a protobuf form (custom resources); the dynamic and metadata clients
// choose their own content types from the same config.
func preferProtobuf(rc *rest.Config) *rest.Config {
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc
}

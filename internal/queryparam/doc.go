// Package queryparam reads URL query parameters the way Kubernetes' parameter codec does, so that
// the API server and the kubelet agree with every client library on what "?watch", "?follow=True"
// or "?stdout=1" mean. It holds no state and imports nothing of skiff.
package queryparam

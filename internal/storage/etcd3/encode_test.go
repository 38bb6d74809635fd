package etcd3

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

// TestEncodeKeepsOrCopies: the store's encoding equals what the codec writes to a bytes.Buffer,
// for both storage encodings; protobuf's bytes are the store's own allocation, kept without a
// copy; and an encoding stays intact after later ones (encoding/json reuses its buffer after the
// write, so its bytes must have been copied).
func TestEncodeKeepsOrCopies(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("pod-", i), Namespace: "default", ResourceVersion: "12"},
			Spec: corev1.PodSpec{NodeName: fmt.Sprint("node-", i), Containers: []corev1.Container{{Name: "app", Image: fmt.Sprint("img:", i)}}}}
	}
	for _, encoding := range []string{storage.EncodingProtobuf, storage.EncodingJSON} {
		t.Run(encoding, func(t *testing.T) {
			codec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, encoding)
			if err != nil {
				t.Fatal(err)
			}
			s := &Store{codec: codec}
			var got [][]byte
			for i := range 5 {
				data, err := s.encode(pod(i))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, data)
			}
			for i, data := range got {
				p := pod(i)
				p.ResourceVersion = ""
				var want bytes.Buffer
				if err := codec.Encode(p, &want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(data, want.Bytes()) {
					t.Fatalf("pod %d encoded as %q, the codec writes %q", i, data, want.Bytes())
				}
			}

			var buf encodeBuffer
			if err := codec.(runtime.EncoderWithAllocator).EncodeWithAllocator(pod(9), &buf, &buf); err != nil {
				t.Fatal(err)
			}
			kept := len(buf.alloc) > 0 && len(buf.out) > 0 && &buf.out[0] == &buf.alloc[0]
			if want := encoding == storage.EncodingProtobuf; kept != want {
				t.Fatalf("bytes kept from the store's own allocation: %v, want %v", kept, want)
			}
		})
	}
}

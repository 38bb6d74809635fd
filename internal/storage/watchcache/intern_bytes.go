//go:build !fieldsv1string

package watchcache

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// setFieldsBytes makes f hold b itself: SetRawBytes would copy it, which is what interning avoids.
// (Built with apimachinery's fieldsv1string tag, FieldsV1 holds an interned string of its own and
// intern_string.go leaves it alone.)
func setFieldsBytes(f *metav1.FieldsV1, b []byte) {
	//lint:ignore SA1019 the accessors copy; sharing the bytes is the point
	f.Raw = b
}

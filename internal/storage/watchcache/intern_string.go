//go:build fieldsv1string

package watchcache

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// setFieldsBytes does nothing: with apimachinery's fieldsv1string tag FieldsV1 already holds a
// process-wide interned string (unique.Handle).
func setFieldsBytes(*metav1.FieldsV1, []byte) {}

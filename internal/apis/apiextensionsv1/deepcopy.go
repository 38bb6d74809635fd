package apiextensionsv1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// The types are copied through their JSON form: they are hand-declared (skiff may not depend on
// k8s.io/apiextensions-apiserver) and the JSON form is exactly what they hold, so a round trip is a
// complete deep copy without a generator. CRDs are written rarely; the cost does not matter.

func jsonCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic("apiextensionsv1: deep copy: " + err.Error())
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic("apiextensionsv1: deep copy: " + err.Error())
	}
	return out
}

// DeepCopy copies the definition.
func (in *CustomResourceDefinition) DeepCopy() *CustomResourceDefinition { return jsonCopy(in) }

// DeepCopyObject implements runtime.Object.
func (in *CustomResourceDefinition) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopy copies the list.
func (in *CustomResourceDefinitionList) DeepCopy() *CustomResourceDefinitionList {
	return jsonCopy(in)
}

// DeepCopyObject implements runtime.Object.
func (in *CustomResourceDefinitionList) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopy copies the schema.
func (in *JSONSchemaProps) DeepCopy() *JSONSchemaProps { return jsonCopy(in) }

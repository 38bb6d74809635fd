package manager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// constructors maps each implemented controller to its constructor.
func constructors() map[string]constructor {
	return map[string]constructor{}
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

package manager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/controller/deployment"
	"github.com/skiff-sh/skiff/internal/controller/replicaset"
)

// constructors maps each implemented controller to its constructor.
func constructors() map[string]constructor {
	return map[string]constructor{
		ReplicaSet: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return replicaset.New(deps) },
		Deployment: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return deployment.New(deps) },
	}
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

package kubelet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
)

// Annotations Kubernetes puts on static and mirror pods.
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigHash   = "kubernetes.io/config.hash"
	annotationConfigMirror = "kubernetes.io/config.mirror"
	configSourceFile       = "file"
)

// staticPod is a pod read from the manifest directory.
type staticPod struct {
	file string
	pod  *corev1.Pod
	hash string
}

// readStaticPods reads every *.yaml, *.yml and *.json manifest of dir as a
// pod for this node, named <name>-<node> as Kubernetes names static pods.
func readStaticPods(dir, nodeName string) ([]staticPod, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("static pods: %w", err)
	}
	var out []staticPod
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(name)) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pod := &corev1.Pod{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(pod); err != nil && !errors.Is(err, io.EOF) {
			errs = append(errs, fmt.Errorf("static pod %s: %w", name, err))
			continue
		}
		if pod.Kind != "" && pod.Kind != "Pod" {
			errs = append(errs, fmt.Errorf("static pod %s: kind %q is not Pod", name, pod.Kind))
			continue
		}
		if pod.Name == "" {
			errs = append(errs, fmt.Errorf("static pod %s: metadata.name is required", name))
			continue
		}
		sum := sha256.Sum256(append(append([]byte(nodeName), 0), data...))
		hash := hex.EncodeToString(sum[:16])
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		pod.Name = pod.Name + "-" + nodeName
		pod.Spec.NodeName = nodeName
		pod.UID, pod.ResourceVersion = "", ""
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[annotationConfigSource] = configSourceFile
		pod.Annotations[annotationConfigHash] = hash
		pod.Annotations[annotationConfigMirror] = hash
		pod.Status = corev1.PodStatus{}
		out = append(out, staticPod{file: name, pod: pod, hash: hash})
	}
	return out, errors.Join(errs...)
}

// syncStaticPods mirrors the manifest directory into the API: it creates a
// mirror pod per manifest (which the kubelet then runs like any pod bound
// to it), replaces mirror pods whose manifest changed and deletes those
// whose manifest is gone. Unlike Kubernetes, a static pod only runs while
// the API server accepts its mirror pod.
func (k *Kubelet) syncStaticPods(ctx context.Context) error {
	if k.cfg.PodManifestPath == "" {
		return nil
	}
	desired, readErr := readStaticPods(k.cfg.PodManifestPath, k.cfg.NodeName)
	node := k.nodes.current()
	wanted := map[string]bool{}
	var errs []error
	if readErr != nil {
		errs = append(errs, readErr)
	}
	for _, sp := range desired {
		key := sp.pod.Namespace + "/" + sp.pod.Name
		wanted[key] = true
		existing := k.podByName(sp.pod.Namespace, sp.pod.Name)
		if existing != nil && existing.Annotations[annotationConfigMirror] == sp.hash {
			continue
		}
		if existing != nil {
			if err := k.client.CoreV1().Pods(existing.Namespace).Delete(ctx, existing.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &existing.UID},
			}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("replace mirror pod %s: %w", key, err))
				continue
			}
		}
		mirror := sp.pod.DeepCopy()
		if node != nil && node.UID != "" {
			mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}
		}
		if _, err := k.client.CoreV1().Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create mirror pod %s from %s: %w", key, sp.file, err))
		}
	}
	k.mu.Lock()
	var stale []*corev1.Pod
	for _, e := range k.pods {
		if e.deleted || e.pod == nil {
			continue
		}
		if _, mirror := e.pod.Annotations[annotationConfigMirror]; mirror && e.pod.Annotations[annotationConfigSource] == configSourceFile && !wanted[e.pod.Namespace+"/"+e.pod.Name] {
			stale = append(stale, e.pod)
		}
	}
	k.mu.Unlock()
	for _, pod := range stale {
		if err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete mirror pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (k *Kubelet) staticPodLoop(ctx context.Context) {
	if k.cfg.PodManifestPath == "" {
		return
	}
	ticker := k.clock.NewTicker(k.cfg.StaticPodResyncPeriod)
	defer ticker.Stop()
	for {
		if err := k.syncStaticPods(ctx); err != nil && ctx.Err() == nil {
			k.log.Error("static pods", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

package kubelet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ensureImage makes the container's image present as its pull policy says
// and returns the image reference to create the container from.
func (k *Kubelet) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sandboxConfig *runtimeapi.PodSandboxConfig, src *objectSource) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = defaultPullPolicy(c.Image)
	}
	present, err := k.runtime.ImageStatus(ctx, spec)
	if err != nil {
		k.setWaiting(pod.UID, c.Name, reasonErrImagePull, err.Error())
		return "", err
	}
	switch {
	case policy == corev1.PullNever && present == nil:
		message := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		if k.setWaiting(pod.UID, c.Name, reasonErrImageNeverPull, message) {
			k.recorder.Event(pod, corev1.EventTypeWarning, reasonErrImageNeverPull, message)
		}
		return "", fmt.Errorf("%s", message)
	case present != nil && policy != corev1.PullAlways:
		k.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return present.Id, nil
	}
	pullKey := backoffKey(pod.UID, "pull", c.Name)
	if wait, _ := k.backoff.inBackoff(pullKey); wait > 0 {
		message := fmt.Sprintf("Back-off pulling image %q", c.Image)
		if k.setWaiting(pod.UID, c.Name, reasonImagePullBackOff, message) {
			k.recorder.Event(pod, corev1.EventTypeNormal, "BackOff", message)
		}
		k.enqueueAfter(pod.UID, wait)
		return "", errBackingOff
	}
	k.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	auth, err := pullAuth(pod, c.Image, src)
	if err != nil {
		k.log.Warn("image pull secrets", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	started := k.clock.Now()
	ref, err := k.runtime.PullImage(ctx, spec, auth, sandboxConfig)
	if err != nil {
		k.backoff.restarted(pullKey)
		k.setWaiting(pod.UID, c.Name, reasonErrImagePull, err.Error())
		k.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		return "", err
	}
	k.backoff.reset(pullKey)
	k.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v", c.Image, k.clock.Since(started).Round(time.Millisecond))
	return ref, nil
}

// imageUserOf is the user the image imageRef runs as, as the runtime reports it.
func (k *Kubelet) imageUserOf(ctx context.Context, imageRef string) (imageUser, error) {
	img, err := k.runtime.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef})
	if err != nil {
		return imageUser{}, fmt.Errorf("image %s: %w", imageRef, err)
	}
	switch {
	case img != nil && img.Uid != nil:
		uid := img.Uid.Value
		return imageUser{uid: &uid}, nil
	case img != nil && img.Username != "":
		return imageUser{name: img.Username}, nil
	}
	return imageUser{uid: new(int64)}, nil
}

// defaultPullPolicy is Always for :latest or untagged images, else
// IfNotPresent (the API server normally defaults it already).
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if tag := strings.LastIndex(last, ":"); tag < 0 || last[tag+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// registryHost returns the registry an image reference pulls from.
func registryHost(image string) string {
	first, rest, ok := strings.Cut(image, "/")
	if !ok || rest == "" {
		return "docker.io"
	}
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return first
	}
	return "docker.io"
}

type dockerConfigEntry struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// pullAuth finds credentials for image in the pod's imagePullSecrets
// (kubernetes.io/dockerconfigjson or dockercfg).
func pullAuth(pod *corev1.Pod, image string, src *objectSource) (*runtimeapi.AuthConfig, error) {
	host := registryHost(image)
	for _, ref := range pod.Spec.ImagePullSecrets {
		sec, err := src.secret(pod.Namespace, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("image pull secret %q: %w", ref.Name, err)
		}
		var auths map[string]dockerConfigEntry
		switch sec.Type {
		case corev1.SecretTypeDockerConfigJson:
			var cfg struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(sec.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("image pull secret %q: %w", ref.Name, err)
			}
			auths = cfg.Auths
		case corev1.SecretTypeDockercfg:
			if err := json.Unmarshal(sec.Data[corev1.DockerConfigKey], &auths); err != nil {
				return nil, fmt.Errorf("image pull secret %q: %w", ref.Name, err)
			}
		default:
			continue
		}
		for server, entry := range auths {
			if normalizeRegistry(server) != host {
				continue
			}
			auth := &runtimeapi.AuthConfig{Username: entry.Username, Password: entry.Password, ServerAddress: server}
			if entry.Auth != "" {
				if decoded, err := base64.StdEncoding.DecodeString(entry.Auth); err == nil {
					if user, pass, ok := strings.Cut(string(decoded), ":"); ok {
						auth.Username, auth.Password = user, pass
					}
				}
			}
			return auth, nil
		}
	}
	return nil, nil
}

func normalizeRegistry(server string) string {
	server = strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	server, _, _ = strings.Cut(server, "/")
	switch server {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return server
}

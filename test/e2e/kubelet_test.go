package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kubeletFixtures are the API objects the kubelet pods read from.
const kubeletFixtures = `apiVersion: v1
kind: ConfigMap
metadata: {name: env-config}
data: {color: blue, size: large}
---
apiVersion: v1
kind: Secret
metadata: {name: env-secret}
stringData: {password: s3cret, USER_NAME: admin}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: vol-config}
data: {greeting: hello-from-configmap, other: second-key}
---
apiVersion: v1
kind: Secret
metadata: {name: vol-secret}
stringData: {token: secret-token-value}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: live-config}
data: {mode: before}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: host-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: PVDIR, type: DirectoryOrCreate}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  volumeName: host-pv
  resources: {requests: {storage: 1Gi}}
`

// kubeletPods run at once so that their start-up, probes and back-offs overlap.
const kubeletPods = `apiVersion: v1
kind: Pod
metadata: {name: env, labels: {tier: backend}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sleep, inf]
    resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 500m, memory: 64Mi}}
    env:
    - {name: PLAIN, value: plain-value}
    - {name: EXPANDED, value: "$(PLAIN)-expanded"}
    - {name: FROM_CM, valueFrom: {configMapKeyRef: {name: env-config, key: color}}}
    - {name: FROM_SECRET, valueFrom: {secretKeyRef: {name: env-secret, key: password}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: MEM_LIMIT_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: CPU_REQUEST_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {containerName: c, resource: limits.cpu}}}
    envFrom:
    - {prefix: CM_, configMapRef: {name: env-config}}
    - secretRef: {name: env-secret}
---
apiVersion: v1
kind: Pod
metadata: {name: volumes, labels: {app: vols}, annotations: {note: from-the-annotation}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sleep, inf]
    resources: {limits: {memory: 64Mi}}
    volumeMounts:
    - {name: scratch, mountPath: /v/scratch}
    - {name: memory, mountPath: /v/memory}
    - {name: host, mountPath: /v/host}
    - {name: cm, mountPath: /v/cm}
    - {name: cm-items, mountPath: /v/cm-items}
    - {name: secret, mountPath: /v/secret}
    - {name: downward, mountPath: /v/downward}
    - {name: projected, mountPath: /v/projected}
    - {name: claim, mountPath: /v/claim}
  - name: peer
    image: localhost/busybox:local
    command: [sh, -c, 'echo written-by-peer > /scratch/peer.txt; exec sleep inf']
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: memory, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: host, hostPath: {path: HOSTDIR, type: Directory}}
  - {name: cm, configMap: {name: vol-config}}
  - {name: cm-items, configMap: {name: vol-config, items: [{key: greeting, path: nested/hello.txt, mode: 0400}]}}
  - {name: secret, secret: {secretName: vol-secret, defaultMode: 0440}}
  - name: downward
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: mem_limit, resourceFieldRef: {containerName: c, resource: limits.memory, divisor: 1Mi}}
  - name: projected
    projected:
      sources:
      - configMap: {name: vol-config, items: [{key: greeting, path: cm-greeting}]}
      - secret: {name: vol-secret, items: [{key: token, path: secret-token}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
TOKENSOURCE
  - {name: claim, persistentVolumeClaim: {claimName: data}}
---
apiVersion: v1
kind: Pod
metadata: {name: live-config}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sleep, inf]
    volumeMounts: [{name: cm, mountPath: /config}]
  volumes: [{name: cm, configMap: {name: live-config}}]
---
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sh, -c, 'echo about-to-crash; exit 3']
---
apiVersion: v1
kind: Pod
metadata: {name: liveness}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    # Unhealthy on its first run only: the emptyDir outlives the container and marks the restart.
    # A long probe timeout keeps a slow exec on a loaded machine from counting as a failure.
    command: [sh, -c, 'if [ -e /state/ran-before ]; then touch /tmp/healthy; else touch /state/ran-before; fi; exec sleep inf']
    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1, failureThreshold: 2, timeoutSeconds: 10}
    volumeMounts: [{name: state, mountPath: /state}]
  volumes: [{name: state, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: readiness}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sleep, inf]
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1, timeoutSeconds: 10}
---
apiVersion: v1
kind: Pod
metadata: {name: attach}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    stdin: true
    command: [sh, -c, 'echo attach-ready; while read line; do echo "got:$line"; done']
---
apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sh, -c, 'trap "echo sigterm > /out/graceful; exit 0" TERM; while true; do sleep 0.2; done']
    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: HOSTDIR, type: Directory}}]
---
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sh, -c, 'trap "echo sigterm-ignored > /out/stubborn" TERM; while true; do sleep 0.2; done']
    volumeMounts: [{name: out, mountPath: /out}]
  volumes: [{name: out, hostPath: {path: HOSTDIR, type: Directory}}]
`

// projectedTokenSource is the serviceAccountToken part of the projected volume, added only when
// the API server serves TokenRequest.
const projectedTokenSource = `      - serviceAccountToken: {path: sa-token, expirationSeconds: 3600, audience: skiff-e2e}`

// TestKubelet runs real pods on one whole single-node cluster (real containerd, real kubectl) and
// checks what issue 5 must show: env and volume contents, crash back-off, probes, attach, graceful
// deletion, an image pulled from a registry, and pods surviving a restart of skiff.
func TestKubelet(t *testing.T) {
	var dataDir string
	// Registered first, so it runs after the cluster's own cleanup: nothing of this node may be left.
	t.Cleanup(func() {
		if dataDir != "" {
			if leftovers := processesMentioning(dataDir); len(leftovers) > 0 {
				t.Errorf("processes of the node outlived the test:\n%s", strings.Join(leftovers, "\n"))
			}
			if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dataDir) {
				t.Errorf("mounts of the node outlived the test:\n%s", lineWith(string(mounts), dataDir))
			}
		}
	})
	// The kubelet of this all-in-one node reads its pods and Services from the API server's watch
	// cache in process (shared objects); with client-go's cache mutation detector on, the server
	// dies with a diff if the kubelet changes one instead of copying it (checked below).
	t.Setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
	// A pod's API-backed volumes are refreshed every 10 s instead of every minute, so the changed
	// ConfigMap below reaches its file without a minute's wait for the kubelet's default period.
	c := newWorkerCluster(t, "--kubelet-sync-frequency=10s")
	dataDir = c.dataDir

	hostDir := filepath.Join(c.dataDir, "host-volume")
	pvDir := filepath.Join(c.dataDir, "pv-volume")
	if err := os.MkdirAll(hostDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "from-host.txt"), []byte("written-on-the-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.stdin(strings.ReplaceAll(kubeletFixtures, "PVDIR", pvDir), "apply", "-f", "-")
	bindClaim(t, c, "data", "host-pv")

	tokenServed := strings.Contains(c.kubectl("get", "--raw", "/api/v1"), `"serviceaccounts/token"`)
	pods := strings.ReplaceAll(kubeletPods, "HOSTDIR", hostDir)
	if tokenServed {
		pods = strings.Replace(pods, "TOKENSOURCE", projectedTokenSource, 1)
	} else {
		pods = strings.Replace(pods, "TOKENSOURCE\n", "", 1)
	}
	c.stdin(pods, "apply", "-f", "-")
	waitRunning(t, c, "env", "volumes", "live-config", "liveness", "readiness", "attach", "graceful", "stubborn")
	// The kubelet refreshes configMap volumes on its own; change the data now and look at the
	// end, so the wait overlaps the other checks.
	c.kubectl("patch", "configmap", "live-config", "--type=merge", "-p", `{"data":{"mode":"after"}}`)
	configChanged := time.Now()

	t.Run("env", func(t *testing.T) {
		pod := getPod(t, c, "env")
		env := envOf(c.kubectl("exec", "env", "--", "env"))
		want := map[string]string{
			"PLAIN": "plain-value", "EXPANDED": "plain-value-expanded",
			"FROM_CM": "blue", "FROM_SECRET": "s3cret",
			"POD_NAME": "env", "POD_NAMESPACE": "default", "NODE_NAME": pod.Spec.NodeName,
			"POD_IP": pod.Status.PodIP, "HOST_IP": pod.Status.HostIP, "TIER": "backend",
			"MEM_LIMIT_MI": "64", "CPU_REQUEST_M": "250", "CPU_LIMIT": "1", // 500m rounds up to whole cores
			"CM_color": "blue", "CM_size": "large", "password": "s3cret", "USER_NAME": "admin",
		}
		for name, value := range want {
			if env[name] != value {
				t.Errorf("env %s = %q, want %q", name, env[name], value)
			}
		}
		if pod.Status.PodIP == "" || pod.Spec.NodeName == "" {
			t.Errorf("pod has no IP (%q) or node (%q)", pod.Status.PodIP, pod.Spec.NodeName)
		}
	})

	t.Run("volumes", func(t *testing.T) {
		read := func(path string) string {
			t.Helper()
			return strings.TrimSpace(c.kubectl("exec", "volumes", "-c", "c", "--", "cat", path))
		}
		expect := func(path, want string) {
			t.Helper()
			if got := read(path); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
		// emptyDir: shared between the pod's containers and writable.
		eventually(t, 10*time.Second, func() error {
			if out, err := c.kubectlErr("exec", "volumes", "-c", "c", "--", "cat", "/v/scratch/peer.txt"); err != nil || !strings.Contains(out, "written-by-peer") {
				return fmt.Errorf("peer's file in the emptyDir: %v %s", err, out)
			}
			return nil
		})
		c.kubectl("exec", "volumes", "-c", "c", "--", "sh", "-c", "echo scratch > /v/scratch/mine && echo tmp > /v/memory/mine")
		expect("/v/scratch/mine", "scratch")
		expect("/v/memory/mine", "tmp")
		mounts := c.kubectl("exec", "volumes", "-c", "c", "--", "cat", "/proc/mounts")
		memoryMount := lineWith(mounts, " /v/memory ")
		if !strings.HasPrefix(memoryMount, "tmpfs ") || !strings.Contains(memoryMount, "size=16384k") {
			t.Errorf("emptyDir medium Memory is not a 16Mi tmpfs: %q", memoryMount)
		}
		if strings.HasPrefix(lineWith(mounts, " /v/scratch "), "tmpfs ") {
			t.Errorf("a plain emptyDir is a tmpfs: %q", lineWith(mounts, " /v/scratch "))
		}

		// hostPath: the host's file is visible and the container's writes reach the host.
		expect("/v/host/from-host.txt", "written-on-the-host")
		c.kubectl("exec", "volumes", "-c", "c", "--", "sh", "-c", "echo from-container > /v/host/from-container.txt")
		if data, err := os.ReadFile(filepath.Join(hostDir, "from-container.txt")); err != nil || string(data) != "from-container\n" {
			t.Errorf("hostPath write from the container: %q, %v", data, err)
		}

		// configMap and secret, whole and by items with modes; read-only.
		expect("/v/cm/greeting", "hello-from-configmap")
		expect("/v/cm/other", "second-key")
		expect("/v/cm-items/nested/hello.txt", "hello-from-configmap")
		if out, err := c.kubectlErr("exec", "volumes", "-c", "c", "--", "ls", "/v/cm-items/other"); err == nil {
			t.Errorf("items projected a key that was not listed: %s", out)
		}
		expect("/v/secret/token", "secret-token-value")
		if got := strings.TrimSpace(c.kubectl("exec", "volumes", "-c", "c", "--", "stat", "-L", "-c", "%a", "/v/secret/token", "/v/cm-items/nested/hello.txt")); got != "440\n400" {
			t.Errorf("file modes (secret defaultMode 0440, item mode 0400) = %q", got)
		}
		if out, err := c.kubectlErr("exec", "volumes", "-c", "c", "--", "sh", "-c", "echo x > /v/cm/new"); err == nil {
			t.Errorf("configMap volume is writable: %s", out)
		}

		// downwardAPI.
		expect("/v/downward/name", "volumes")
		expect("/v/downward/labels", `app="vols"`)
		mustContain(t, read("/v/downward/annotations"), `note="from-the-annotation"`)
		expect("/v/downward/mem_limit", "64")

		// projected: configMap + secret + downwardAPI (+ serviceAccountToken when served).
		expect("/v/projected/cm-greeting", "hello-from-configmap")
		expect("/v/projected/secret-token", "secret-token-value")
		expect("/v/projected/namespace", "default")
		if tokenServed {
			if token := read("/v/projected/sa-token"); strings.Count(token, ".") != 2 {
				t.Errorf("projected service account token is not a JWT: %q", token)
			}
		} else {
			t.Log("the API server does not serve serviceaccounts/token: projected serviceAccountToken not checked")
		}

		// persistentVolumeClaim bound to a hostPath PV.
		c.kubectl("exec", "volumes", "-c", "c", "--", "sh", "-c", "echo persisted > /v/claim/data.txt")
		if data, err := os.ReadFile(filepath.Join(pvDir, "data.txt")); err != nil || string(data) != "persisted\n" {
			t.Errorf("claim's write on the PV's host path: %q, %v", data, err)
		}
	})

	t.Run("crashing container backs off", func(t *testing.T) {
		var last corev1.ContainerStatus
		eventually(t, 90*time.Second, func() error {
			pod := getPod(t, c, "crasher")
			if len(pod.Status.ContainerStatuses) != 1 {
				return fmt.Errorf("no container status yet")
			}
			last = pod.Status.ContainerStatuses[0]
			if last.RestartCount < 2 || last.State.Waiting == nil || last.State.Waiting.Reason != "CrashLoopBackOff" {
				return fmt.Errorf("restartCount %d, state %+v", last.RestartCount, last.State)
			}
			return nil
		})
		if last.LastTerminationState.Terminated == nil || last.LastTerminationState.Terminated.ExitCode != 3 {
			t.Errorf("lastState = %+v, want terminated with exit code 3", last.LastTerminationState)
		}
		mustContain(t, c.kubectl("get", "pod", "crasher"), "CrashLoopBackOff")
		mustContain(t, strings.Join(podEvents(t, c, "crasher"), "\n"), "BackOff: Back-off restarting failed container c")
		mustContain(t, c.kubectl("logs", "crasher", "--previous"), "about-to-crash")
	})

	t.Run("failing liveness probe restarts the container", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			pod := getPod(t, c, "liveness")
			if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount != 1 || pod.Status.ContainerStatuses[0].State.Running == nil {
				return fmt.Errorf("status %+v", pod.Status.ContainerStatuses)
			}
			return nil
		})
		events := strings.Join(podEvents(t, c, "liveness"), "\n")
		mustContain(t, events, "Unhealthy: Liveness probe failed", "Killing: Container c failed liveness probe, will be restarted")
		// Healthy after the restart: no second one.
		time.Sleep(4 * time.Second)
		if restarts := getPod(t, c, "liveness").Status.ContainerStatuses[0].RestartCount; restarts != 1 {
			t.Errorf("restartCount = %d after the healthy restart, want 1", restarts)
		}
	})

	t.Run("readiness gates Ready", func(t *testing.T) {
		time.Sleep(2 * time.Second) // several failing probe periods
		if ready := podReady(getPod(t, c, "readiness")); ready {
			t.Fatal("pod is Ready before its readiness probe passed")
		}
		mustContain(t, c.kubectl("get", "pod", "readiness"), "0/1", "Running")
		c.kubectl("exec", "readiness", "--", "touch", "/tmp/ready")
		c.kubectl("wait", "--for=condition=Ready", "pod/readiness", "--timeout=20s")
		mustContain(t, c.kubectl("get", "pod", "readiness"), "1/1")
		c.kubectl("exec", "readiness", "--", "rm", "/tmp/ready")
		c.kubectl("wait", "--for=condition=Ready=false", "pod/readiness", "--timeout=20s")
	})

	t.Run("attach", func(t *testing.T) {
		attach := c.kubectlCmd(t.Context(), "", "attach", "-i", "attach", "-c", "c")
		stdin, err := attach.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		attach.Stdout, attach.Stderr = &out, &out
		if err := attach.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = attach.Process.Kill(); _ = attach.Wait() }()
		eventually(t, 20*time.Second, func() error {
			// The attach may not be wired up yet when the first line is written: repeat it.
			_, _ = io.WriteString(stdin, "hello-attach\n")
			if !strings.Contains(out.String(), "got:hello-attach") {
				return fmt.Errorf("attach output: %q", out.String())
			}
			return nil
		})
		mustContain(t, c.kubectl("logs", "attach"), "attach-ready", "got:hello-attach")
	})

	t.Run("image pulled from a registry", func(t *testing.T) {
		archiveDir := t.TempDir()
		archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", archiveDir)
		if err != nil {
			t.Fatalf("build image: %v\n%s", err, archive)
		}
		registry := newLoopbackRegistry(t, strings.TrimSpace(archive), "busybox", "pulled")
		registry.trustPlainHTTP(t, filepath.Join(c.dataDir, "kubelet", "containerd", "certs.d"))

		c.kubectl("run", "pulled", "--image="+registry.Image(), "--", "sleep", "inf")
		c.kubectl("wait", "--for=condition=Ready", "pod/pulled", "--timeout=60s")
		mustContain(t, strings.Join(podEvents(t, c, "pulled"), "\n"),
			"Pulling: Pulling image \""+registry.Image()+"\"", "Pulled: Successfully pulled image \""+registry.Image()+"\"")
		requests := strings.Join(registry.Requests(), "\n")
		mustContain(t, requests, "/v2/busybox/manifests/pulled", "/v2/busybox/blobs/sha256:")
		mustContain(t, c.kubectl("exec", "pulled", "--", "cat", "/"+registryMarkerPath), "busybox:pulled")
		if id := getPod(t, c, "pulled").Status.ContainerStatuses[0].ImageID; !strings.Contains(id, "sha256:") {
			t.Errorf("imageID = %q", id)
		}

		// IfNotPresent with the image now present: no registry traffic; Always: pulled again.
		asked := len(registry.Requests())
		c.kubectl("run", "present", "--image="+registry.Image(), "--image-pull-policy=IfNotPresent", "--", "sleep", "inf")
		c.kubectl("wait", "--for=condition=Ready", "pod/present", "--timeout=60s")
		mustContain(t, strings.Join(podEvents(t, c, "present"), "\n"), "Pulled: Container image \""+registry.Image()+"\" already present on machine")
		if len(registry.Requests()) != asked {
			t.Errorf("IfNotPresent with the image present asked the registry: %v", registry.Requests()[asked:])
		}
		c.kubectl("run", "always", "--image="+registry.Image(), "--image-pull-policy=Always", "--", "sleep", "inf")
		c.kubectl("wait", "--for=condition=Ready", "pod/always", "--timeout=60s")
		mustContain(t, strings.Join(podEvents(t, c, "always"), "\n"), "Pulled: Successfully pulled image")
		mustContain(t, strings.Join(registry.Requests()[asked:], "\n"), "/v2/busybox/manifests/pulled")

		// Never: an absent image is not pulled.
		c.kubectl("run", "never", "--image="+registry.Host()+"/busybox:absent", "--image-pull-policy=Never", "--", "sleep", "inf")
		eventually(t, 30*time.Second, func() error {
			pod := getPod(t, c, "never")
			if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Waiting == nil ||
				pod.Status.ContainerStatuses[0].State.Waiting.Reason != "ErrImageNeverPull" {
				return fmt.Errorf("status %+v", pod.Status.ContainerStatuses)
			}
			return nil
		})
		mustNotContain(t, strings.Join(registry.Requests(), "\n"), "absent")
		c.kubectl("delete", "pod", "pulled", "present", "always", "never", "--grace-period=1", "--timeout=60s")
	})

	t.Run("deleted pod stops within its grace period", func(t *testing.T) {
		start := time.Now()
		c.kubectl("delete", "pod", "graceful", "--timeout=30s")
		if took := time.Since(start); took > 8*time.Second {
			t.Errorf("a pod exiting on SIGTERM took %v to delete (grace period 5s)", took)
		}
		if data, err := os.ReadFile(filepath.Join(hostDir, "graceful")); err != nil || string(data) != "sigterm\n" {
			t.Errorf("the graceful pod did not see SIGTERM: %q %v", data, err)
		}

		start = time.Now()
		c.kubectl("delete", "pod", "stubborn", "--timeout=30s")
		took := time.Since(start)
		if took < 4500*time.Millisecond || took > 12*time.Second {
			t.Errorf("a pod ignoring SIGTERM took %v to delete, want about its 5s grace period", took)
		}
		if data, err := os.ReadFile(filepath.Join(hostDir, "stubborn")); err != nil || string(data) != "sigterm-ignored\n" {
			t.Errorf("the stubborn pod did not see SIGTERM: %q %v", data, err)
		}
	})

	t.Run("changed configMap reaches the mounted file", func(t *testing.T) {
		eventually(t, 100*time.Second, func() error {
			out, err := c.kubectlErr("exec", "live-config", "--", "cat", "/config/mode")
			if err != nil || strings.TrimSpace(out) != "after" {
				return fmt.Errorf("/config/mode = %q (%v)", out, err)
			}
			return nil
		})
		t.Logf("new configMap data reached the file %v after the change", time.Since(configChanged).Round(time.Second))
	})

	t.Run("securityContext", func(t *testing.T) {
		c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: sec}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 2000}
  containers:
  - name: c
    image: localhost/busybox:local
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext:
      readOnlyRootFilesystem: true
      capabilities: {drop: ["ALL"], add: ["NET_BIND_SERVICE"]}
  - name: priv
    image: localhost/busybox:local
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    securityContext: {privileged: true, runAsUser: 0}
`, "apply", "-f", "-")
		c.kubectl("wait", "--for=condition=Ready", "pod/sec", "--timeout=60s")
		mustContain(t, c.kubectl("exec", "sec", "-c", "c", "--", "id"), "uid=1000", "gid=2000")
		out, err := c.kubectlErr("exec", "sec", "-c", "c", "--", "touch", "/written")
		if err == nil {
			t.Fatal("wrote to a read-only root filesystem")
		}
		mustContain(t, out, "Read-only file system")
		// Only NET_BIND_SERVICE (bit 10) stays in the bounding set.
		mustContain(t, c.kubectl("exec", "sec", "-c", "c", "--", "grep", "CapBnd", "/proc/self/status"), "0000000000000400")
		// A privileged container gets every capability the node itself has.
		priv := c.kubectl("exec", "sec", "-c", "priv", "--", "grep", "CapBnd", "/proc/self/status")
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, priv, lineWith(string(status), "CapBnd"))
		mustContain(t, c.kubectl("exec", "sec", "-c", "priv", "--", "id"), "uid=0")
		c.kubectl("delete", "pod", "sec", "--grace-period=1", "--timeout=60s")
	})

	t.Run("the kubelet left shared objects unchanged", func(t *testing.T) {
		mustContain(t, c.logAll(), "the kubelet's pod and service informers read the watch cache in process")
		if log := c.logAll(); strings.Contains(log, "ALTERED!") || strings.Contains(log, "panic: cache ") {
			t.Fatalf("a component mutated an object from its informer cache:\n%s", c.log())
		}
		if out, err := c.kubectlErr("get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
			t.Fatalf("server not ready after the pods' lifecycles (%v %q); log:\n%s", err, out, c.log())
		}
	})

	t.Run("restarting skiff keeps pods running", func(t *testing.T) {
		before := containerStates(t, c, "env", "volumes", "readiness")
		c.terminate()
		c.start()
		eventually(t, 60*time.Second, func() error {
			out, err := c.kubectlErr("wait", "--for=condition=Ready", "node", "--all", "--timeout=2s")
			if err != nil {
				return errString(out)
			}
			return nil
		})
		// Let the restarted kubelet relist and sync every pod before comparing.
		time.Sleep(5 * time.Second)
		after := containerStates(t, c, "env", "volumes", "readiness")
		for key, was := range before {
			if after[key] != was {
				t.Errorf("%s: before restart %s, after %s", key, was, after[key])
			}
		}
		mustContain(t, c.kubectl("exec", "volumes", "-c", "c", "--", "cat", "/v/scratch/mine"), "scratch")
		mustContain(t, c.kubectl("get", "pod", "env", "volumes"), "Running")
	})
}

// bindClaim waits for the claim to be bound to the volume; skiff runs no persistent volume
// binder, so after a short wait the test binds them itself the way the binder would (the PV's
// claimRef and both objects' status phase Bound), which is all the kubelet looks at.
func bindClaim(t *testing.T, c *cluster, claim, volume string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if c.kubectl("get", "pvc", claim, "-o", "jsonpath={.status.phase}") == "Bound" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("no controller bound pvc/%s: binding it to pv/%s by hand", claim, volume)
	uid := c.kubectl("get", "pvc", claim, "-o", "jsonpath={.metadata.uid}")
	c.kubectl("patch", "pv", volume, "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1","namespace":"default","name":%q,"uid":%q}}}`, claim, uid))
	c.kubectl("patch", "pv", volume, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Bound"}}`)
	c.kubectl("patch", "pvc", claim, "--subresource=status", "--type=merge", "-p",
		`{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}`)
	mustContain(t, c.kubectl("get", "pvc", claim), "Bound", volume)
}

func getPod(t *testing.T, c *cluster, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	out := c.kubectl("get", "pod", name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &pod); err != nil {
		t.Fatalf("pod %s: %v\n%s", name, err, out)
	}
	return pod
}

func podReady(pod corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitRunning waits until every named pod is Running with all containers started.
func waitRunning(t *testing.T, c *cluster, names ...string) {
	t.Helper()
	eventually(t, 120*time.Second, func() error {
		var pods corev1.PodList
		out, err := c.kubectlErr("get", "pods", "-o", "json")
		if err != nil {
			return errString(out)
		}
		if err := json.Unmarshal([]byte(out), &pods); err != nil {
			return err
		}
		running := map[string]bool{}
		for _, p := range pods.Items {
			all := p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
			for _, s := range p.Status.ContainerStatuses {
				all = all && s.State.Running != nil
			}
			running[p.Name] = all
		}
		for _, name := range names {
			if !running[name] {
				return fmt.Errorf("pod %s is not running yet", name)
			}
		}
		return nil
	})
}

// podEvents returns "Reason: message" for each event about the pod.
func podEvents(t *testing.T, c *cluster, pod string) []string {
	t.Helper()
	var events corev1.EventList
	out := c.kubectl("get", "events", "-o", "json")
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("events: %v", err)
	}
	var lines []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod {
			lines = append(lines, e.Reason+": "+e.Message)
		}
	}
	return lines
}

// containerStates maps "pod/container" to its container ID and restart count.
func containerStates(t *testing.T, c *cluster, pods ...string) map[string]string {
	t.Helper()
	states := map[string]string{}
	for _, name := range pods {
		for _, s := range getPod(t, c, name).Status.ContainerStatuses {
			states[name+"/"+s.Name] = s.ContainerID + " restarts=" + strconv.Itoa(int(s.RestartCount))
		}
	}
	return states
}

// terminate stops skiff with SIGTERM (as a service manager would) and waits for it to exit.
func (c *cluster) terminate() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = c.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		c.t.Errorf("skiff did not exit within 30s of SIGTERM; log:\n%s", c.log())
	}
	c.logFile.Close()
	c.cmd = nil
}

func envOf(out string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, value, ok := strings.Cut(line, "="); ok {
			env[name] = value
		}
	}
	return env
}

func lineWith(text, substring string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substring) {
			return line
		}
	}
	return ""
}

// processesMentioning lists running processes whose command line contains s (the node's data
// dir appears in every containerd and shim command line of that node).
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(cmdline, s) {
			out = append(out, e.Name()+": "+cmdline)
		}
	}
	return out
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package kubelet

import (
	"os"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A container running as a non-root user writes its termination message into the file the
// kubelet creates (conformance: "should report termination message if TerminationMessagePath is
// set as non-root user and at a non-default path"), whatever the kubelet's umask.
func TestTerminationLogFileIsWorldWritable(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	k := &Kubelet{cfg: Config{DataDir: t.TempDir()}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	path, err := k.terminationLogFile(pod, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode().Perm(); mode != 0o666 {
		t.Errorf("termination log mode %o, want 666", mode)
	}
}

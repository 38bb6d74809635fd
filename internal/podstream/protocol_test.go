package podstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

func TestChooseExecProtocol(t *testing.T) {
	tests := []struct {
		offered []string
		want    string
		ok      bool
	}{
		{nil, "", true},
		{[]string{"v5.channel.k8s.io", "v4.channel.k8s.io"}, "v5.channel.k8s.io", true},
		{[]string{"v9.channel.k8s.io", "v4.channel.k8s.io"}, "v4.channel.k8s.io", true},
		{[]string{"base64.channel.k8s.io"}, "base64.channel.k8s.io", true},
		{[]string{"SPDY/3.1+portforward.k8s.io"}, "", false},
		{[]string{"binary.k8s.io"}, "", false},
	}
	for _, tc := range tests {
		if got, ok := chooseExecProtocol(tc.offered); got != tc.want || ok != tc.ok {
			t.Errorf("chooseExecProtocol(%v) = %q, %v; want %q, %v", tc.offered, got, ok, tc.want, tc.ok)
		}
	}
	h := http.Header{}
	h.Add("Sec-WebSocket-Protocol", "v5.channel.k8s.io, v4.channel.k8s.io")
	h.Add("Sec-WebSocket-Protocol", " channel.k8s.io ,")
	if got, want := offeredProtocols(h), []string{"v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io"}; !reflect.DeepEqual(got, want) {
		t.Errorf("offeredProtocols = %v, want %v", got, want)
	}
}

func TestOptionsAndChannels(t *testing.T) {
	tests := []struct {
		query string
		want  Options
		types []wsstream.ChannelType
	}{
		{"stdin=true&stdout=true&stderr=true", Options{Stdin: true, Stdout: true, Stderr: true},
			[]wsstream.ChannelType{wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.ReadChannel}},
		// The kubelet's names; a terminal folds stderr into stdout.
		{"input=1&output=1&error=1&tty=1", Options{Stdin: true, Stdout: true, TTY: true},
			[]wsstream.ChannelType{wsstream.ReadChannel, wsstream.WriteChannel, wsstream.IgnoreChannel, wsstream.WriteChannel, wsstream.ReadChannel}},
		{"stdout=false", Options{},
			[]wsstream.ChannelType{wsstream.IgnoreChannel, wsstream.IgnoreChannel, wsstream.IgnoreChannel, wsstream.WriteChannel, wsstream.ReadChannel}},
	}
	for _, tc := range tests {
		q, _ := url.ParseQuery(tc.query)
		got := OptionsFromQuery(q)
		if got != tc.want {
			t.Errorf("OptionsFromQuery(%s) = %+v, want %+v", tc.query, got, tc.want)
		}
		if types := channelTypes(got); !reflect.DeepEqual(types, tc.types) {
			t.Errorf("%s: channels %v, want %v", tc.query, types, tc.types)
		}
		protocols := channelProtocols(got)
		if len(protocols) != len(execProtocolNames())+1 || protocols["v4.base64.channel.k8s.io"].Binary || !protocols["v5.channel.k8s.io"].Binary {
			t.Errorf("%s: protocol table %v", tc.query, protocols)
		}
	}
}

func TestStatusOnTheErrorChannel(t *testing.T) {
	exit := exec.CodeExitError{Err: errors.New("command terminated with exit code 7"), Code: 7}
	upstream := apierrors.NewBadRequest("container app is not running")
	tests := []struct {
		err      error
		protocol string
		want     string
	}{
		{nil, "v5.channel.k8s.io", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`},
		{nil, "channel.k8s.io", ""},
		{exit, "v4.channel.k8s.io", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 7","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}`},
		{fmt.Errorf("stream: %w", exit), "v2.channel.k8s.io", "command terminated with non-zero exit code: exit status 7"},
		{upstream, "v5.channel.k8s.io", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"container app is not running","reason":"BadRequest","code":400}`},
		{errors.New("dial tcp: refused"), "base64.channel.k8s.io", "Internal error occurred: dial tcp: refused"},
	}
	for _, tc := range tests {
		got, err := errorChannelMessage(tc.protocol, statusFor(tc.err))
		if err != nil || string(got) != tc.want {
			t.Errorf("%v under %s = %s, %v; want %s", tc.err, tc.protocol, got, err, tc.want)
		}
	}
}

func TestTunnelProtocolsAndRefusals(t *testing.T) {
	got := tunnelUpstreamProtocols([]string{"v4.channel.k8s.io", "SPDY/3.1+portforward.k8s.io", "SPDY/3.1+other", "SPDY/3.1+v2.portforward.k8s.io"})
	if want := []string{"portforward.k8s.io", "v2.portforward.k8s.io"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tunnelUpstreamProtocols = %v, want %v", got, want)
	}
	tests := []struct {
		code   int
		body   string
		reason metav1.StatusReason
		msg    string
	}{
		{404, "pod \"x\" not found\n", metav1.StatusReasonNotFound, `pod "x" not found`},
		{400, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"m","reason":"BadRequest","code":400}`, metav1.StatusReasonBadRequest, "m"},
		{502, "", metav1.StatusReasonInternalError, "Bad Gateway"},
		{418, "teapot", metav1.StatusReasonUnknown, "teapot"},
	}
	for _, tc := range tests {
		st := upstreamRefusal(tc.code, []byte(tc.body)).ErrStatus
		if int(st.Code) != tc.code || st.Reason != tc.reason || st.Message != tc.msg {
			t.Errorf("upstreamRefusal(%d, %q) = %d %s %q", tc.code, tc.body, st.Code, st.Reason, st.Message)
		}
	}
}

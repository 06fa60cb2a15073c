package lifecycle

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
)

// Behind a task that keeps failing in a named queue, a binding's events
// wait coalesced per object: 1,000 updates of one object leave one event,
// the newest, and the hook runs once with it when the queue moves on.
func TestEventsCoalescePerObject(t *testing.T) {
	t.Parallel()
	id := runID(t)
	failCfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"trigger","apiVersion":"v1","kind":"ConfigMap","queue":"q","executeHookOnSynchronization":false,"labelSelector":{"matchLabels":{"run":"%s","k":"trigger"}}}]}`, id)
	watchCfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"obj","apiVersion":"v1","kind":"ConfigMap","queue":"q","executeHookOnSynchronization":false,"jqFilter":".data.v","labelSelector":{"matchLabels":{"run":"%s","k":"obj"}}}]}`, id)
	files := map[string]string{
		"modules/values.yaml":   "global: {}\n",
		"global-hooks/fail.sh":  recordingHook("fail", failCfg, `[ -e "$RECORD_FILE.pass" ] || { echo "failing on purpose" >&2; exit 1; }`),
		"global-hooks/watch.sh": recordingHook("watch", watchCfg, ""),
	}
	e := parallelSetup(t, files, nil)
	e.createConfigMap("obj", map[string]string{"run": id, "k": "obj"}, map[string]string{"v": "0"})
	e.start()
	e.waitReady()

	e.createConfigMap("trigger", map[string]string{"run": id, "k": "trigger"}, nil)
	e.eventually("the failing task at the head of q", func() bool { return len(e.contexts("fail", "trigger")) >= 2 })
	const updates = 1000
	for i := 1; i <= updates; i++ {
		e.updateConfigMap("obj", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"v": fmt.Sprint(i)} })
	}
	e.eventually("every update seen", func() bool {
		return testutil.ToFloat64(e.op.metrics.KubeEvents.WithLabelValues("watch.sh", "obj")) >= updates
	})
	var waiting []string
	for _, q := range e.op.Queues().Dump() {
		if q.Name == "q" {
			for _, task := range q.Tasks {
				waiting = append(waiting, task.Description)
			}
		}
	}
	if len(waiting) != 2 || !strings.HasPrefix(waiting[1], "watch.sh") {
		t.Fatalf("queue q: %v; want the failing task and one run of watch.sh", waiting)
	}

	if err := os.WriteFile(e.records+".pass", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.eventually("watch.sh's run", func() bool { return len(e.contexts("watch", "obj")) > 0 })
	e.eventually("queue q drained", func() bool { return e.op.Queues().Queue("q").Len() == 0 })
	got := e.contexts("watch", "obj")
	if len(got) != 1 || got[0]["watchEvent"] != "Modified" || got[0]["filterResult"] != fmt.Sprint(updates) {
		t.Fatalf("watch.sh got %d event contexts (first %v); want one, the last update", len(got), got[0])
	}
}

package adminui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// The redrive page: a preview counts and samples the selection, start
// makes a task, pause, resume and cancel change it, and the ended task
// stays listed as an audit record with who ended it.
func TestRedrivePage(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	pv := b.get("/redrive?preview=1&queue=emails&cause=rejected")
	mustContain(t, "preview", pv.body, `id="preview-count">1<`, "send_welcome", `id="start-redrive"`)
	// Every cause can be selected, cancelled and expired included.
	for _, cause := range []string{"cancelled", "expired"} {
		pc := b.get("/redrive?preview=1&queue=emails&cause=" + cause)
		mustContain(t, "preview of cause "+cause, pc.body, `<option value="`+cause+`" selected>`, `id="preview-count">0<`)
		mustNotContain(t, "preview of cause "+cause, pc.body, `id="redrive-error"`)
	}
	all := b.get("/redrive?preview=1&queue=emails")
	mustContain(t, "preview all", all.body, `id="preview-count">4<`)
	bad := b.get("/redrive?preview=1&queue=emails&to_queue=other")
	mustContain(t, "same-id to another queue", bad.body, `id="redrive-error"`, "choose fresh")

	csrf := b.csrf("/redrive")
	start := b.post("/redrive/start", url.Values{"csrf": {csrf}, "queue": {"emails"}, "mode": {"fresh"}, "to_queue": {"reports"}, "rate": {"5"}})
	mustContain(t, "start", start.body, `class="flash ok"`, "Started redrive task 1 (fresh replay): 4 records to move.", `data-task="1"`, "fresh → reports")
	var task engine.RedriveTask
	read := func() {
		e.read(func(eng engine.View) error {
			var err error
			task, err = eng.GetRedrive(1)
			return err
		})
	}
	for _, step := range []struct {
		verb string
		want engine.RedriveState
	}{{"pause", engine.RedrivePaused}, {"resume", engine.RedriveRunning}, {"cancel", engine.RedriveCancelled}} {
		r := b.post("/redrive/1/"+step.verb, url.Values{"csrf": {csrf}})
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d", step.verb, r.status)
		}
		mustContain(t, step.verb, r.body, `class="flash ok"`)
		if read(); task.State != step.want {
			t.Fatalf("after %s: %v, want %v", step.verb, task.State, step.want)
		}
	}
	audit := b.get("/redrive")
	mustContain(t, "audit", audit.body, "redrive-cancelled", "by "+operatorName)
}

package apiserver

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// writeObject writes obj (an object or list of the resource) in the negotiated form.
func (h *resourceHandler) writeObject(w http.ResponseWriter, r *http.Request, code int, choice mediaChoice, obj runtime.Object) {
	out, gv, err := h.convertOutput(choice, obj, r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if err := h.s.writeEncoded(w, code, choice, gv, out); err != nil {
		h.s.log.Debug("write response", "path", r.URL.Path, "err", err)
	}
}

// convertOutput turns obj into what the client asked for: the object itself (served version), a
// meta.k8s.io Table, or PartialObjectMetadata(List).
func (h *resourceHandler) convertOutput(choice mediaChoice, obj runtime.Object, r *http.Request) (runtime.Object, schema.GroupVersion, error) {
	switch choice.kind {
	case outputTable:
		includeObject := "Metadata"
		if r != nil {
			if v := r.URL.Query().Get("includeObject"); v != "" {
				includeObject = v
			}
		}
		t, err := h.toTable(obj, includeObject)
		return t, metav1.SchemeGroupVersion, err
	case outputPartialMetadata, outputPartialMetadataList:
		out, err := toPartialMetadata(obj)
		return out, metav1.SchemeGroupVersion, err
	}
	return obj, h.res.GroupVersion, nil
}

func (h *resourceHandler) printer() *registry.TablePrinter {
	if h.res.Printer != nil {
		return h.res.Printer
	}
	return defaultPrinter
}

// defaultPrinter is Kubernetes' fallback: the name and the creation time.
var defaultPrinter = &registry.TablePrinter{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(obj runtime.Object, _ time.Time) ([]interface{}, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
	},
}

func (h *resourceHandler) toTable(obj runtime.Object, includeObject string) (*metav1.Table, error) {
	p := h.printer()
	now := h.s.clock.Now()
	table := &metav1.Table{ColumnDefinitions: p.Columns}
	addRow := func(item runtime.Object) error {
		cells, err := p.Row(item, now)
		if err != nil {
			return err
		}
		row := metav1.TableRow{Cells: cells}
		switch includeObject {
		case "None":
		case "Object":
			raw, err := runtime.Encode(h.s.codecs.LegacyCodec(h.res.GroupVersion), item)
			if err != nil {
				return err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		default:
			pm, err := partialMetadataOf(item)
			if err != nil {
				return err
			}
			raw, err := runtime.Encode(h.s.codecs.LegacyCodec(metav1.SchemeGroupVersion), pm)
			if err != nil {
				return err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		table.Rows = append(table.Rows, row)
		return nil
	}
	if meta.IsListType(obj) {
		if err := meta.EachListItem(obj, func(item runtime.Object) error { return addRow(item) }); err != nil {
			return nil, fmt.Errorf("print list: %w", err)
		}
		if lm, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = lm.GetResourceVersion()
			table.Continue = lm.GetContinue()
			table.RemainingItemCount = lm.GetRemainingItemCount()
		}
		return table, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	table.ResourceVersion = m.GetResourceVersion()
	if m.GetName() == "" {
		// A bookmark carries only a resourceVersion: no row to print.
		return table, nil
	}
	return table, addRow(obj)
}

func partialMetadataOf(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: *metaCopy(m)}
	pm.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}
	return pm, nil
}

func toPartialMetadata(obj runtime.Object) (runtime.Object, error) {
	if !meta.IsListType(obj) {
		return partialMetadataOf(obj)
	}
	list := &metav1.PartialObjectMetadataList{}
	if lm, err := meta.ListAccessor(obj); err == nil {
		list.ResourceVersion = lm.GetResourceVersion()
		list.Continue = lm.GetContinue()
		list.RemainingItemCount = lm.GetRemainingItemCount()
	}
	err := meta.EachListItem(obj, func(item runtime.Object) error {
		pm, err := partialMetadataOf(item)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, *pm)
		return nil
	})
	return list, err
}

func metaCopy(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om.DeepCopy()
	}
	return &metav1.ObjectMeta{
		Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(),
		Annotations: m.GetAnnotations(), OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(),
		ManagedFields: m.GetManagedFields(),
	}
}

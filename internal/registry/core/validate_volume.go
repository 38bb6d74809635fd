package core

import (
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// setSources returns the JSON names of the non-nil members of a volume source struct (every
// member is a pointer), in declaration order.
func setSources(source any) []string {
	v := reflect.ValueOf(source)
	t := v.Type()
	var set []string
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			set = append(set, name)
		}
	}
	return set
}

// validateVolumes checks pod volumes and returns them by name for mount checks.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := make(map[string]corev1.VolumeSource, len(volumes))
	for i := range volumes {
		vol := &volumes[i]
		p := fldPath.Index(i)
		if vol.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, validateDNS1123Label(vol.Name, p.Child("name"))...)
			if _, dup := byName[vol.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("name"), vol.Name))
			}
		}
		errs = append(errs, validateVolumeSource(&vol.VolumeSource, p)...)
		if vol.Name != "" {
			byName[vol.Name] = vol.VolumeSource
		}
	}
	return byName, errs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	set := setSources(*src)
	switch {
	case len(set) == 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case len(set) > 1:
		return field.ErrorList{field.Forbidden(fldPath.Child(set[1]), "may not specify more than 1 volume type")}
	}
	var errs field.ErrorList
	switch {
	case src.HostPath != nil:
		errs = append(errs, validateHostPath(src.HostPath, fldPath.Child("hostPath"))...)
	case src.EmptyDir != nil:
		if src.EmptyDir.SizeLimit != nil {
			errs = append(errs, validateNonnegativeQuantity(*src.EmptyDir.SizeLimit, fldPath.Child("emptyDir", "sizeLimit"))...)
		}
	case src.ConfigMap != nil:
		p := fldPath.Child("configMap")
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("items"))...)
	case src.Secret != nil:
		p := fldPath.Child("secret")
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, p.Child("items"))...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.DownwardAPI != nil:
		p := fldPath.Child("downwardAPI")
		errs = append(errs, validateFileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateDownwardAPIItems(src.DownwardAPI.Items, p.Child("items"))...)
	case src.Projected != nil:
		errs = append(errs, validateProjected(src.Projected, fldPath.Child("projected"))...)
	case src.NFS != nil:
		p := fldPath.Child("nfs")
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.CSI != nil:
		if src.CSI.Driver == "" {
			errs = append(errs, field.Required(fldPath.Child("csi", "driver"), ""))
		}
	case src.Ephemeral != nil:
		if src.Ephemeral.VolumeClaimTemplate == nil {
			errs = append(errs, field.Required(fldPath.Child("ephemeral", "volumeClaimTemplate"), ""))
		}
	case src.Image != nil:
		if src.Image.Reference == "" {
			errs = append(errs, field.Required(fldPath.Child("image", "reference"), ""))
		}
	}
	return errs
}

var supportedHostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
	corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

func validateHostPath(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if hp.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else {
		for _, part := range strings.Split(hp.Path, "/") {
			if part == ".." {
				errs = append(errs, field.Invalid(fldPath.Child("path"), hp.Path, "must not contain '..'"))
				break
			}
		}
	}
	if hp.Type != nil && !slices.Contains(supportedHostPathTypes, *hp.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), *hp.Type, stringsOf(supportedHostPathTypes...)))
	}
	return errs
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > maxFileMode || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		p := fldPath.Index(i)
		if item.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if item.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalNonReservedPath(item.Path, p.Child("path"))...)
		}
		errs = append(errs, validateFileMode(item.Mode, p.Child("mode"))...)
	}
	return errs
}

func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") {
		errs = append(errs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return errs
}

func validateDownwardAPIItems(items []corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		p := fldPath.Index(i)
		if item.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalNonReservedPath(item.Path, p.Child("path"))...)
		}
		errs = append(errs, validateFileMode(item.Mode, p.Child("mode"))...)
		switch {
		case item.FieldRef != nil && item.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case item.FieldRef != nil:
			errs = append(errs, validateObjectFieldSelector(item.FieldRef, p.Child("fieldRef"))...)
		case item.ResourceFieldRef != nil:
			if item.ResourceFieldRef.Resource == "" {
				errs = append(errs, field.Required(p.Child("resourceFieldRef", "resource"), ""))
			}
		default:
			errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return errs
}

func validateProjected(pv *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateFileMode(pv.DefaultMode, fldPath.Child("defaultMode"))
	paths := sets.New[string]()
	for i, src := range pv.Sources {
		p := fldPath.Child("sources").Index(i)
		set := setSources(src)
		if len(set) == 0 {
			errs = append(errs, field.Required(p, "must specify exactly 1 of: secret, configMap, downwardAPI, serviceAccountToken, clusterTrustBundle, podCertificate"))
			continue
		}
		if len(set) > 1 {
			errs = append(errs, field.Forbidden(p.Child(set[1]), "may not specify more than 1 volume type per source"))
			continue
		}
		var itemPaths []string
		switch {
		case src.Secret != nil:
			errs = append(errs, validateKeyToPaths(src.Secret.Items, p.Child("secret", "items"))...)
			for _, it := range src.Secret.Items {
				itemPaths = append(itemPaths, it.Path)
			}
		case src.ConfigMap != nil:
			errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("configMap", "items"))...)
			for _, it := range src.ConfigMap.Items {
				itemPaths = append(itemPaths, it.Path)
			}
		case src.DownwardAPI != nil:
			errs = append(errs, validateDownwardAPIItems(src.DownwardAPI.Items, p.Child("downwardAPI", "items"))...)
			for _, it := range src.DownwardAPI.Items {
				itemPaths = append(itemPaths, it.Path)
			}
		case src.ServiceAccountToken != nil:
			tp := p.Child("serviceAccountToken")
			if src.ServiceAccountToken.Path == "" {
				errs = append(errs, field.Required(tp.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(src.ServiceAccountToken.Path, tp.Child("path"))...)
				itemPaths = append(itemPaths, src.ServiceAccountToken.Path)
			}
			if s := src.ServiceAccountToken.ExpirationSeconds; s != nil {
				if *s < 10*60 {
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
				} else if *s > 1<<32 {
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
				}
			}
		}
		for _, ip := range itemPaths {
			if ip != "" && paths.Has(ip) {
				errs = append(errs, field.Invalid(p, ip, "conflicting duplicate paths"))
			}
			paths.Insert(ip)
		}
	}
	return errs
}

package apiextensionsv1

import (
	"encoding/json"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apis/pbwire"
)

// The protobuf encoding of the definitions, field for field that of upstream's generated.proto for
// apiextensions.k8s.io/v1 (k8s.io/apiextensions-apiserver), so that clients asking for
// application/vnd.kubernetes.protobuf (the conformance framework does) read and send definitions.
// The bytes are those gogo-generated code writes: fields in ascending number, non-pointer scalars
// and embedded messages always, pointers and bytes when set, map entries by sorted key. Metadata
// is encoded by apimachinery's own generated code. Checked against bytes upstream's code wrote
// (testdata/crd-upstream.pb).

// Marshal encodes the definition as upstream's CustomResourceDefinition message.
func (in *CustomResourceDefinition) Marshal() ([]byte, error) {
	e := newEncoder()
	e.crd(in)
	return e.Result()
}

// Unmarshal decodes upstream's CustomResourceDefinition message.
func (in *CustomResourceDefinition) Unmarshal(data []byte) error {
	*in = CustomResourceDefinition{}
	return decodeCRD(data, in)
}

// Reset empties the definition (the protobuf serializer calls it before Unmarshal).
func (in *CustomResourceDefinition) Reset() { *in = CustomResourceDefinition{} }

// Marshal encodes the list as upstream's CustomResourceDefinitionList message.
func (in *CustomResourceDefinitionList) Marshal() ([]byte, error) {
	e := newEncoder()
	e.Raw(1, in.ListMeta.Marshal)
	for i := range in.Items {
		e.msg(2, func(e *pbEncoder) { e.crd(&in.Items[i]) })
	}
	return e.Result()
}

// Unmarshal decodes upstream's CustomResourceDefinitionList message.
func (in *CustomResourceDefinitionList) Unmarshal(data []byte) error {
	*in = CustomResourceDefinitionList{}
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return in.ListMeta.Unmarshal(v.Bytes)
		case 2:
			var c CustomResourceDefinition
			if err := decodeCRD(v.Bytes, &c); err != nil {
				return err
			}
			in.Items = append(in.Items, c)
		}
		return nil
	})
}

// Reset empties the list.
func (in *CustomResourceDefinitionList) Reset() { *in = CustomResourceDefinitionList{} }

// pbEncoder is the shared wire encoder with this package's messages as methods.
type pbEncoder struct{ *pbwire.Encoder }

func newEncoder() *pbEncoder { return &pbEncoder{&pbwire.Encoder{}} }

// msg writes a nested message built by f.
func (e *pbEncoder) msg(num protowire.Number, f func(*pbEncoder)) {
	e.Msg(num, func(child *pbwire.Encoder) { f(&pbEncoder{child}) })
}

func (e *pbEncoder) crd(c *CustomResourceDefinition) {
	e.Raw(1, c.ObjectMeta.Marshal)
	e.msg(2, func(e *pbEncoder) { e.spec(&c.Spec) })
	e.msg(3, func(e *pbEncoder) { e.status(&c.Status) })
}

func (e *pbEncoder) spec(s *CustomResourceDefinitionSpec) {
	e.Str(1, s.Group)
	e.msg(3, func(e *pbEncoder) { e.names(&s.Names) })
	e.Str(4, string(s.Scope))
	for i := range s.Versions {
		e.msg(7, func(e *pbEncoder) { e.version(&s.Versions[i]) })
	}
	if s.Conversion != nil {
		e.msg(9, func(e *pbEncoder) { e.conversion(s.Conversion) })
	}
	e.Bool(10, s.PreserveUnknownFields)
}

func (e *pbEncoder) names(n *CustomResourceDefinitionNames) {
	e.Str(1, n.Plural)
	e.Str(2, n.Singular)
	e.Strs(3, n.ShortNames)
	e.Str(4, n.Kind)
	e.Str(5, n.ListKind)
	e.Strs(6, n.Categories)
}

func (e *pbEncoder) version(v *CustomResourceDefinitionVersion) {
	e.Str(1, v.Name)
	e.Bool(2, v.Served)
	e.Bool(3, v.Storage)
	if v.Schema != nil {
		e.msg(4, func(e *pbEncoder) {
			if v.Schema.OpenAPIV3Schema != nil {
				e.msg(1, func(e *pbEncoder) { e.schema(v.Schema.OpenAPIV3Schema) })
			}
		})
	}
	if v.Subresources != nil {
		e.msg(5, func(e *pbEncoder) {
			if v.Subresources.Status != nil {
				e.msg(1, func(*pbEncoder) {})
			}
			if sc := v.Subresources.Scale; sc != nil {
				e.msg(2, func(e *pbEncoder) {
					e.Str(1, sc.SpecReplicasPath)
					e.Str(2, sc.StatusReplicasPath)
					e.OptStr(3, sc.LabelSelectorPath)
				})
			}
		})
	}
	for _, col := range v.AdditionalPrinterColumns {
		e.msg(6, func(e *pbEncoder) {
			e.Str(1, col.Name)
			e.Str(2, col.Type)
			e.Str(3, col.Format)
			e.Str(4, col.Description)
			e.Varint(5, int64(col.Priority))
			e.Str(6, col.JSONPath)
		})
	}
	e.Bool(7, v.Deprecated)
	e.OptStr(8, v.DeprecationWarning)
	for _, f := range v.SelectableFields {
		e.msg(9, func(e *pbEncoder) { e.Str(1, f.JSONPath) })
	}
}

func (e *pbEncoder) conversion(c *CustomResourceConversion) {
	e.Str(1, string(c.Strategy))
	if w := c.Webhook; w != nil {
		e.msg(2, func(e *pbEncoder) {
			if cc := w.ClientConfig; cc != nil {
				e.msg(2, func(e *pbEncoder) {
					if s := cc.Service; s != nil {
						e.msg(1, func(e *pbEncoder) {
							e.Str(1, s.Namespace)
							e.Str(2, s.Name)
							e.OptStr(3, s.Path)
							if s.Port != nil {
								e.Varint(4, int64(*s.Port))
							}
						})
					}
					e.Blob(2, cc.CABundle)
					e.OptStr(3, cc.URL)
				})
			}
			e.Strs(3, w.ConversionReviewVersions)
		})
	}
}

func (e *pbEncoder) status(s *CustomResourceDefinitionStatus) {
	for _, c := range s.Conditions {
		e.msg(1, func(e *pbEncoder) {
			e.Str(1, string(c.Type))
			e.Str(2, string(c.Status))
			e.Raw(3, c.LastTransitionTime.Marshal)
			e.Str(4, c.Reason)
			e.Str(5, c.Message)
		})
	}
	e.msg(2, func(e *pbEncoder) { e.names(&s.AcceptedNames) })
	e.Strs(3, s.StoredVersions)
}

func (e *pbEncoder) json(num protowire.Number, j *JSON) {
	e.msg(num, func(e *pbEncoder) { e.Blob(1, j.Raw) })
}

func (e *pbEncoder) schemaMap(num protowire.Number, m map[string]JSONSchemaProps) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		e.msg(num, func(e *pbEncoder) {
			e.Str(1, k)
			e.msg(2, func(e *pbEncoder) { e.schema(&v) })
		})
	}
}

func (e *pbEncoder) orBool(num protowire.Number, o *JSONSchemaPropsOrBool) {
	if o == nil {
		return
	}
	e.msg(num, func(e *pbEncoder) {
		e.Bool(1, o.Allows)
		if o.Schema != nil {
			e.msg(2, func(e *pbEncoder) { e.schema(o.Schema) })
		}
	})
}

func (e *pbEncoder) schema(s *JSONSchemaProps) {
	e.Str(1, s.ID)
	e.Str(2, s.Schema)
	e.OptStr(3, s.Ref)
	e.Str(4, s.Description)
	e.Str(5, s.Type)
	e.Str(6, s.Format)
	e.Str(7, s.Title)
	if s.Default != nil {
		e.json(8, s.Default)
	}
	e.OptDouble(9, s.Maximum)
	e.Bool(10, s.ExclusiveMaximum)
	e.OptDouble(11, s.Minimum)
	e.Bool(12, s.ExclusiveMinimum)
	e.OptInt64(13, s.MaxLength)
	e.OptInt64(14, s.MinLength)
	e.Str(15, s.Pattern)
	e.OptInt64(16, s.MaxItems)
	e.OptInt64(17, s.MinItems)
	e.Bool(18, s.UniqueItems)
	e.OptDouble(19, s.MultipleOf)
	for i := range s.Enum {
		e.json(20, &s.Enum[i])
	}
	e.OptInt64(21, s.MaxProperties)
	e.OptInt64(22, s.MinProperties)
	e.Strs(23, s.Required)
	if s.Items != nil {
		e.msg(24, func(e *pbEncoder) {
			if s.Items.Schema != nil {
				e.msg(1, func(e *pbEncoder) { e.schema(s.Items.Schema) })
			}
			for i := range s.Items.JSONSchemas {
				e.msg(2, func(e *pbEncoder) { e.schema(&s.Items.JSONSchemas[i]) })
			}
		})
	}
	for i := range s.AllOf {
		e.msg(25, func(e *pbEncoder) { e.schema(&s.AllOf[i]) })
	}
	for i := range s.OneOf {
		e.msg(26, func(e *pbEncoder) { e.schema(&s.OneOf[i]) })
	}
	for i := range s.AnyOf {
		e.msg(27, func(e *pbEncoder) { e.schema(&s.AnyOf[i]) })
	}
	if s.Not != nil {
		e.msg(28, func(e *pbEncoder) { e.schema(s.Not) })
	}
	e.schemaMap(29, s.Properties)
	e.orBool(30, s.AdditionalProperties)
	e.schemaMap(31, s.PatternProperties)
	e.dependencies(32, s.Dependencies)
	e.orBool(33, s.AdditionalItems)
	e.schemaMap(34, s.Definitions)
	if d := s.ExternalDocs; d != nil {
		e.msg(35, func(e *pbEncoder) {
			e.Str(1, d.Description)
			e.Str(2, d.URL)
		})
	}
	if s.Example != nil {
		e.json(36, s.Example)
	}
	e.Bool(37, s.Nullable)
	e.OptBool(38, s.XPreserveUnknownFields)
	e.Bool(39, s.XEmbeddedResource)
	e.Bool(40, s.XIntOrString)
	e.Strs(41, s.XListMapKeys)
	e.OptStr(42, s.XListType)
	e.OptStr(43, s.XMapType)
	for _, r := range s.XValidations {
		e.msg(44, func(e *pbEncoder) {
			e.Str(1, r.Rule)
			e.Str(2, r.Message)
			e.Str(3, r.MessageExpression)
			e.OptStr(4, r.Reason)
			e.Str(5, r.FieldPath)
			e.OptBool(6, r.OptionalOldSelf)
		})
	}
}

// dependencies writes upstream's JSONSchemaPropsOrStringArray entries: a JSON list of property
// names, or a schema.
func (e *pbEncoder) dependencies(num protowire.Number, m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := m[k]
		var props []string
		var schema *JSONSchemaProps
		if err := json.Unmarshal(raw, &props); err != nil {
			schema = &JSONSchemaProps{}
			if err := json.Unmarshal(raw, schema); err != nil {
				e.Fail(fmt.Errorf("dependencies %q: neither a list of properties nor a schema: %w", k, err))
				return
			}
		}
		e.msg(num, func(e *pbEncoder) {
			e.Str(1, k)
			e.msg(2, func(e *pbEncoder) {
				if schema != nil {
					e.msg(1, func(e *pbEncoder) { e.schema(schema) })
				}
				e.Strs(2, props)
			})
		})
	}
}

func decodeCRD(data []byte, c *CustomResourceDefinition) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			return c.ObjectMeta.Unmarshal(v.Bytes)
		case 2:
			return decodeSpec(v.Bytes, &c.Spec)
		case 3:
			return decodeStatus(v.Bytes, &c.Status)
		}
		return nil
	})
}

func decodeSpec(data []byte, s *CustomResourceDefinitionSpec) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			s.Group = v.Str()
		case 3:
			return decodeNames(v.Bytes, &s.Names)
		case 4:
			s.Scope = ResourceScope(v.Str())
		case 7:
			var ver CustomResourceDefinitionVersion
			if err := decodeVersion(v.Bytes, &ver); err != nil {
				return err
			}
			s.Versions = append(s.Versions, ver)
		case 9:
			s.Conversion = &CustomResourceConversion{}
			return decodeConversion(v.Bytes, s.Conversion)
		case 10:
			s.PreserveUnknownFields = v.Bool()
		}
		return nil
	})
}

func decodeNames(data []byte, n *CustomResourceDefinitionNames) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			n.Plural = v.Str()
		case 2:
			n.Singular = v.Str()
		case 3:
			n.ShortNames = append(n.ShortNames, v.Str())
		case 4:
			n.Kind = v.Str()
		case 5:
			n.ListKind = v.Str()
		case 6:
			n.Categories = append(n.Categories, v.Str())
		}
		return nil
	})
}

func decodeVersion(data []byte, ver *CustomResourceDefinitionVersion) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			ver.Name = v.Str()
		case 2:
			ver.Served = v.Bool()
		case 3:
			ver.Storage = v.Bool()
		case 4:
			ver.Schema = &CustomResourceValidation{}
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				if num == 1 {
					ver.Schema.OpenAPIV3Schema = &JSONSchemaProps{}
					return decodeSchema(v.Bytes, ver.Schema.OpenAPIV3Schema)
				}
				return nil
			})
		case 5:
			ver.Subresources = &CustomResourceSubresources{}
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					ver.Subresources.Status = &CustomResourceSubresourceStatus{}
				case 2:
					sc := &CustomResourceSubresourceScale{}
					ver.Subresources.Scale = sc
					return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
						switch num {
						case 1:
							sc.SpecReplicasPath = v.Str()
						case 2:
							sc.StatusReplicasPath = v.Str()
						case 3:
							sc.LabelSelectorPath = v.StrP()
						}
						return nil
					})
				}
				return nil
			})
		case 6:
			var col CustomResourceColumnDefinition
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					col.Name = v.Str()
				case 2:
					col.Type = v.Str()
				case 3:
					col.Format = v.Str()
				case 4:
					col.Description = v.Str()
				case 5:
					col.Priority = int32(v.Varint)
				case 6:
					col.JSONPath = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			ver.AdditionalPrinterColumns = append(ver.AdditionalPrinterColumns, col)
		case 7:
			ver.Deprecated = v.Bool()
		case 8:
			ver.DeprecationWarning = v.StrP()
		case 9:
			var f SelectableField
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				if num == 1 {
					f.JSONPath = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			ver.SelectableFields = append(ver.SelectableFields, f)
		}
		return nil
	})
}

func decodeConversion(data []byte, c *CustomResourceConversion) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			c.Strategy = ConversionStrategyType(v.Str())
		case 2:
			w := &WebhookConversion{}
			c.Webhook = w
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 2:
					cc := &WebhookClientConfig{}
					w.ClientConfig = cc
					return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
						switch num {
						case 1:
							s := &ServiceReference{}
							cc.Service = s
							return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
								switch num {
								case 1:
									s.Namespace = v.Str()
								case 2:
									s.Name = v.Str()
								case 3:
									s.Path = v.StrP()
								case 4:
									p := int32(v.Varint)
									s.Port = &p
								}
								return nil
							})
						case 2:
							cc.CABundle = append([]byte{}, v.Bytes...)
						case 3:
							cc.URL = v.StrP()
						}
						return nil
					})
				case 3:
					w.ConversionReviewVersions = append(w.ConversionReviewVersions, v.Str())
				}
				return nil
			})
		}
		return nil
	})
}

func decodeStatus(data []byte, s *CustomResourceDefinitionStatus) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			var c CustomResourceDefinitionCondition
			if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					c.Type = CustomResourceDefinitionConditionType(v.Str())
				case 2:
					c.Status = ConditionStatus(v.Str())
				case 3:
					var t metav1.Time
					if err := t.Unmarshal(v.Bytes); err != nil {
						return err
					}
					c.LastTransitionTime = t
				case 4:
					c.Reason = v.Str()
				case 5:
					c.Message = v.Str()
				}
				return nil
			}); err != nil {
				return err
			}
			s.Conditions = append(s.Conditions, c)
		case 2:
			return decodeNames(v.Bytes, &s.AcceptedNames)
		case 3:
			s.StoredVersions = append(s.StoredVersions, v.Str())
		}
		return nil
	})
}

func decodeJSON(data []byte) (JSON, error) {
	var j JSON
	err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		if num == 1 {
			j.Raw = append([]byte{}, v.Bytes...)
		}
		return nil
	})
	return j, err
}

func decodeSchemaInto(data []byte) (JSONSchemaProps, error) {
	var s JSONSchemaProps
	err := decodeSchema(data, &s)
	return s, err
}

// decodeSchemaMapEntry reads one map<string, JSONSchemaProps> entry into m.
func decodeSchemaMapEntry(data []byte, m *map[string]JSONSchemaProps) error {
	var key string
	var value JSONSchemaProps
	if err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			key = v.Str()
		case 2:
			return decodeSchema(v.Bytes, &value)
		}
		return nil
	}); err != nil {
		return err
	}
	if *m == nil {
		*m = map[string]JSONSchemaProps{}
	}
	(*m)[key] = value
	return nil
}

func decodeOrBool(data []byte) (*JSONSchemaPropsOrBool, error) {
	o := &JSONSchemaPropsOrBool{}
	err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			o.Allows = v.Bool()
		case 2:
			o.Schema = &JSONSchemaProps{}
			return decodeSchema(v.Bytes, o.Schema)
		}
		return nil
	})
	return o, err
}

// decodeSchema reads one JSONSchemaProps message: its plain fields (decodeSchemaScalar) and those
// holding JSON or schemas.
func decodeSchema(data []byte, s *JSONSchemaProps) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		if decodeSchemaScalar(num, v, s) {
			return nil
		}
		var err error
		switch num {
		case 8:
			var j JSON
			j, err = decodeJSON(v.Bytes)
			s.Default = &j
		case 20:
			var j JSON
			j, err = decodeJSON(v.Bytes)
			s.Enum = append(s.Enum, j)
		case 24:
			s.Items = &JSONSchemaPropsOrArray{}
			err = pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					s.Items.Schema = &JSONSchemaProps{}
					return decodeSchema(v.Bytes, s.Items.Schema)
				case 2:
					item, err := decodeSchemaInto(v.Bytes)
					s.Items.JSONSchemas = append(s.Items.JSONSchemas, item)
					return err
				}
				return nil
			})
		case 25, 26, 27:
			var item JSONSchemaProps
			item, err = decodeSchemaInto(v.Bytes)
			switch num {
			case 25:
				s.AllOf = append(s.AllOf, item)
			case 26:
				s.OneOf = append(s.OneOf, item)
			default:
				s.AnyOf = append(s.AnyOf, item)
			}
		case 28:
			s.Not = &JSONSchemaProps{}
			err = decodeSchema(v.Bytes, s.Not)
		case 29:
			err = decodeSchemaMapEntry(v.Bytes, &s.Properties)
		case 30:
			s.AdditionalProperties, err = decodeOrBool(v.Bytes)
		case 31:
			err = decodeSchemaMapEntry(v.Bytes, &s.PatternProperties)
		case 32:
			err = decodeDependency(v.Bytes, s)
		case 33:
			s.AdditionalItems, err = decodeOrBool(v.Bytes)
		case 34:
			err = decodeSchemaMapEntry(v.Bytes, &s.Definitions)
		case 35:
			d := &ExternalDocumentation{}
			s.ExternalDocs = d
			err = pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					d.Description = v.Str()
				case 2:
					d.URL = v.Str()
				}
				return nil
			})
		case 36:
			var j JSON
			j, err = decodeJSON(v.Bytes)
			s.Example = &j
		case 44:
			var r ValidationRule
			err = pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					r.Rule = v.Str()
				case 2:
					r.Message = v.Str()
				case 3:
					r.MessageExpression = v.Str()
				case 4:
					r.Reason = v.StrP()
				case 5:
					r.FieldPath = v.Str()
				case 6:
					b := v.Bool()
					r.OptionalOldSelf = &b
				}
				return nil
			})
			s.XValidations = append(s.XValidations, r)
		}
		return err
	})
}

// decodeSchemaScalar sets the plain (string, number, boolean) field num of s; it reports whether
// num is one.
func decodeSchemaScalar(num protowire.Number, v pbwire.Field, s *JSONSchemaProps) bool {
	switch num {
	case 1:
		s.ID = v.Str()
	case 2:
		s.Schema = v.Str()
	case 3:
		s.Ref = v.StrP()
	case 4:
		s.Description = v.Str()
	case 5:
		s.Type = v.Str()
	case 6:
		s.Format = v.Str()
	case 7:
		s.Title = v.Str()
	case 9:
		s.Maximum = v.Float64P()
	case 10:
		s.ExclusiveMaximum = v.Bool()
	case 11:
		s.Minimum = v.Float64P()
	case 12:
		s.ExclusiveMinimum = v.Bool()
	case 13:
		s.MaxLength = v.Int64P()
	case 14:
		s.MinLength = v.Int64P()
	case 15:
		s.Pattern = v.Str()
	case 16:
		s.MaxItems = v.Int64P()
	case 17:
		s.MinItems = v.Int64P()
	case 18:
		s.UniqueItems = v.Bool()
	case 19:
		s.MultipleOf = v.Float64P()
	case 21:
		s.MaxProperties = v.Int64P()
	case 22:
		s.MinProperties = v.Int64P()
	case 23:
		s.Required = append(s.Required, v.Str())
	case 37:
		s.Nullable = v.Bool()
	case 38:
		b := v.Bool()
		s.XPreserveUnknownFields = &b
	case 39:
		s.XEmbeddedResource = v.Bool()
	case 40:
		s.XIntOrString = v.Bool()
	case 41:
		s.XListMapKeys = append(s.XListMapKeys, v.Str())
	case 42:
		s.XListType = v.StrP()
	case 43:
		s.XMapType = v.StrP()
	default:
		return false
	}
	return true
}

// decodeDependency reads one dependencies entry (a schema or a list of property names) back into
// its JSON form.
func decodeDependency(data []byte, s *JSONSchemaProps) error {
	var key string
	var schema *JSONSchemaProps
	var props []string
	if err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			key = v.Str()
		case 2:
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					schema = &JSONSchemaProps{}
					return decodeSchema(v.Bytes, schema)
				case 2:
					props = append(props, v.Str())
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return err
	}
	var raw []byte
	var err error
	if schema != nil {
		raw, err = json.Marshal(schema)
	} else {
		if props == nil {
			props = []string{}
		}
		raw, err = json.Marshal(props)
	}
	if err != nil {
		return err
	}
	if s.Dependencies == nil {
		s.Dependencies = map[string]json.RawMessage{}
	}
	s.Dependencies[key] = raw
	return nil
}

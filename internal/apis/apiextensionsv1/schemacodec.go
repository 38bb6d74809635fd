package apiextensionsv1

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/skiff-sh/skiff/internal/apis/pbwire"
)

// schemaField is one field of upstream's JSONSchemaProps message, written and read in one place:
// encode writes it (nothing when it is unset and upstream writes nothing), decode reads one
// occurrence of it (a repeated field's occurrences append).
type schemaField struct {
	num    protowire.Number
	encode func(e *pbEncoder, s *JSONSchemaProps)
	decode func(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error
}

// schemaFields is the JSONSchemaProps message, field for field in ascending number (the order
// gogo-generated code writes them in). It is a function, not a package variable: its fields
// encode and decode nested schemas through it.
func schemaFields() []schemaField {
	type p = JSONSchemaProps
	return []schemaField{
		strField(1, func(s *p) *string { return &s.ID }),
		strField(2, func(s *p) *string { return &s.Schema }),
		optStrField(3, func(s *p) **string { return &s.Ref }),
		strField(4, func(s *p) *string { return &s.Description }),
		strField(5, func(s *p) *string { return &s.Type }),
		strField(6, func(s *p) *string { return &s.Format }),
		strField(7, func(s *p) *string { return &s.Title }),
		jsonField(8, func(s *p) **JSON { return &s.Default }),
		optDoubleField(9, func(s *p) **float64 { return &s.Maximum }),
		boolField(10, func(s *p) *bool { return &s.ExclusiveMaximum }),
		optDoubleField(11, func(s *p) **float64 { return &s.Minimum }),
		boolField(12, func(s *p) *bool { return &s.ExclusiveMinimum }),
		optInt64Field(13, func(s *p) **int64 { return &s.MaxLength }),
		optInt64Field(14, func(s *p) **int64 { return &s.MinLength }),
		strField(15, func(s *p) *string { return &s.Pattern }),
		optInt64Field(16, func(s *p) **int64 { return &s.MaxItems }),
		optInt64Field(17, func(s *p) **int64 { return &s.MinItems }),
		boolField(18, func(s *p) *bool { return &s.UniqueItems }),
		optDoubleField(19, func(s *p) **float64 { return &s.MultipleOf }),
		{num: 20, encode: encodeEnum, decode: decodeEnum},
		optInt64Field(21, func(s *p) **int64 { return &s.MaxProperties }),
		optInt64Field(22, func(s *p) **int64 { return &s.MinProperties }),
		strsField(23, func(s *p) *[]string { return &s.Required }),
		{num: 24, encode: encodeItems, decode: decodeItems},
		schemaListField(25, func(s *p) *[]JSONSchemaProps { return &s.AllOf }),
		schemaListField(26, func(s *p) *[]JSONSchemaProps { return &s.OneOf }),
		schemaListField(27, func(s *p) *[]JSONSchemaProps { return &s.AnyOf }),
		{num: 28, encode: encodeNot, decode: decodeNot},
		schemaMapField(29, func(s *p) *map[string]JSONSchemaProps { return &s.Properties }),
		orBoolField(30, func(s *p) **JSONSchemaPropsOrBool { return &s.AdditionalProperties }),
		schemaMapField(31, func(s *p) *map[string]JSONSchemaProps { return &s.PatternProperties }),
		{num: 32, encode: encodeDependencies, decode: decodeDependency},
		orBoolField(33, func(s *p) **JSONSchemaPropsOrBool { return &s.AdditionalItems }),
		schemaMapField(34, func(s *p) *map[string]JSONSchemaProps { return &s.Definitions }),
		{num: 35, encode: encodeExternalDocs, decode: decodeExternalDocs},
		jsonField(36, func(s *p) **JSON { return &s.Example }),
		boolField(37, func(s *p) *bool { return &s.Nullable }),
		optBoolField(38, func(s *p) **bool { return &s.XPreserveUnknownFields }),
		boolField(39, func(s *p) *bool { return &s.XEmbeddedResource }),
		boolField(40, func(s *p) *bool { return &s.XIntOrString }),
		strsField(41, func(s *p) *[]string { return &s.XListMapKeys }),
		optStrField(42, func(s *p) **string { return &s.XListType }),
		optStrField(43, func(s *p) **string { return &s.XMapType }),
		{num: 44, encode: encodeValidations, decode: decodeValidation},
	}
}

// schema writes s as upstream's JSONSchemaProps message.
func (e *pbEncoder) schema(s *JSONSchemaProps) {
	if len(*e.schemaFields) == 0 {
		*e.schemaFields = schemaFields()
	}
	for _, f := range *e.schemaFields {
		f.encode(e, s)
	}
}

// schemaDecoder reads JSONSchemaProps messages by their field table.
type schemaDecoder struct {
	fields map[protowire.Number]schemaField
}

func newSchemaDecoder() *schemaDecoder {
	d := &schemaDecoder{fields: map[protowire.Number]schemaField{}}
	for _, f := range schemaFields() {
		d.fields[f.num] = f
	}
	return d
}

// schema reads one JSONSchemaProps message into s; fields it does not know are skipped.
func (d *schemaDecoder) schema(data []byte, s *JSONSchemaProps) error {
	return pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		if f, ok := d.fields[num]; ok {
			return f.decode(d, s, v)
		}
		return nil
	})
}

// newSchema reads one JSONSchemaProps message as a new value.
func (d *schemaDecoder) newSchema(data []byte) (JSONSchemaProps, error) {
	var s JSONSchemaProps
	err := d.schema(data, &s)
	return s, err
}

// The plain fields, over the wire helpers.

func strField(num protowire.Number, get func(*JSONSchemaProps) *string) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.Str(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error { *get(s) = v.Str(); return nil }}
}

func optStrField(num protowire.Number, get func(*JSONSchemaProps) **string) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.OptStr(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error { *get(s) = v.StrP(); return nil }}
}

func strsField(num protowire.Number, get func(*JSONSchemaProps) *[]string) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.Strs(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			*get(s) = append(*get(s), v.Str())
			return nil
		}}
}

func boolField(num protowire.Number, get func(*JSONSchemaProps) *bool) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.Bool(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error { *get(s) = v.Bool(); return nil }}
}

func optBoolField(num protowire.Number, get func(*JSONSchemaProps) **bool) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.OptBool(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			b := v.Bool()
			*get(s) = &b
			return nil
		}}
}

func optInt64Field(num protowire.Number, get func(*JSONSchemaProps) **int64) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.OptInt64(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error { *get(s) = v.Int64P(); return nil }}
}

func optDoubleField(num protowire.Number, get func(*JSONSchemaProps) **float64) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) { e.OptDouble(num, *get(s)) },
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error { *get(s) = v.Float64P(); return nil }}
}

// jsonField is an optional JSON value (default, example).
func jsonField(num protowire.Number, get func(*JSONSchemaProps) **JSON) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) {
			if j := *get(s); j != nil {
				e.json(num, j)
			}
		},
		decode: func(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			j, err := decodeJSON(v.Bytes)
			*get(s) = &j
			return err
		}}
}

func (e *pbEncoder) json(num protowire.Number, j *JSON) {
	e.msg(num, func(e *pbEncoder) { e.Blob(1, j.Raw) })
}

// The fields holding schemas.

// schemaListField is a repeated schema (allOf, oneOf, anyOf).
func schemaListField(num protowire.Number, get func(*JSONSchemaProps) *[]JSONSchemaProps) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) {
			list := *get(s)
			for i := range list {
				e.msg(num, func(e *pbEncoder) { e.schema(&list[i]) })
			}
		},
		decode: func(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			item, err := d.newSchema(v.Bytes)
			*get(s) = append(*get(s), item)
			return err
		}}
}

// schemaMapField is a map<string, JSONSchemaProps>, its entries written by sorted key as
// upstream's generated code writes them.
func schemaMapField(num protowire.Number, get func(*JSONSchemaProps) *map[string]JSONSchemaProps) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) {
			m := *get(s)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				v := m[k]
				e.msg(num, func(e *pbEncoder) {
					e.Str(1, k)
					e.msg(2, func(e *pbEncoder) { e.schema(&v) })
				})
			}
		},
		decode: func(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			return d.mapEntry(v.Bytes, get(s))
		}}
}

// mapEntry reads one map<string, JSONSchemaProps> entry into m.
func (d *schemaDecoder) mapEntry(data []byte, m *map[string]JSONSchemaProps) error {
	var key string
	var value JSONSchemaProps
	if err := pbwire.EachField(data, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			key = v.Str()
		case 2:
			return d.schema(v.Bytes, &value)
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

// orBoolField is a JSONSchemaPropsOrBool (additionalProperties, additionalItems).
func orBoolField(num protowire.Number, get func(*JSONSchemaProps) **JSONSchemaPropsOrBool) schemaField {
	return schemaField{num: num,
		encode: func(e *pbEncoder, s *JSONSchemaProps) {
			o := *get(s)
			if o == nil {
				return
			}
			e.msg(num, func(e *pbEncoder) {
				e.Bool(1, o.Allows)
				if o.Schema != nil {
					e.msg(2, func(e *pbEncoder) { e.schema(o.Schema) })
				}
			})
		},
		decode: func(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
			o := &JSONSchemaPropsOrBool{}
			*get(s) = o
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					o.Allows = v.Bool()
				case 2:
					o.Schema = &JSONSchemaProps{}
					return d.schema(v.Bytes, o.Schema)
				}
				return nil
			})
		}}
}

func encodeEnum(e *pbEncoder, s *JSONSchemaProps) {
	for i := range s.Enum {
		e.json(20, &s.Enum[i])
	}
}

func decodeEnum(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	j, err := decodeJSON(v.Bytes)
	s.Enum = append(s.Enum, j)
	return err
}

func encodeItems(e *pbEncoder, s *JSONSchemaProps) {
	if s.Items == nil {
		return
	}
	e.msg(24, func(e *pbEncoder) {
		if s.Items.Schema != nil {
			e.msg(1, func(e *pbEncoder) { e.schema(s.Items.Schema) })
		}
		for i := range s.Items.JSONSchemas {
			e.msg(2, func(e *pbEncoder) { e.schema(&s.Items.JSONSchemas[i]) })
		}
	})
}

func decodeItems(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	s.Items = &JSONSchemaPropsOrArray{}
	return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			s.Items.Schema = &JSONSchemaProps{}
			return d.schema(v.Bytes, s.Items.Schema)
		case 2:
			item, err := d.newSchema(v.Bytes)
			s.Items.JSONSchemas = append(s.Items.JSONSchemas, item)
			return err
		}
		return nil
	})
}

func encodeNot(e *pbEncoder, s *JSONSchemaProps) {
	if s.Not != nil {
		e.msg(28, func(e *pbEncoder) { e.schema(s.Not) })
	}
}

func decodeNot(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	s.Not = &JSONSchemaProps{}
	return d.schema(v.Bytes, s.Not)
}

// encodeDependencies writes upstream's JSONSchemaPropsOrStringArray entries: a JSON list of
// property names, or a schema.
func encodeDependencies(e *pbEncoder, s *JSONSchemaProps) {
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		raw := s.Dependencies[k]
		var props []string
		var schema *JSONSchemaProps
		if err := json.Unmarshal(raw, &props); err != nil {
			schema = &JSONSchemaProps{}
			if err := json.Unmarshal(raw, schema); err != nil {
				e.Fail(fmt.Errorf("dependencies %q: neither a list of properties nor a schema: %w", k, err))
				return
			}
		}
		e.msg(32, func(e *pbEncoder) {
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

// decodeDependency reads one dependencies entry (a schema or a list of property names) back into
// its JSON form.
func decodeDependency(d *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	var key string
	var schema *JSONSchemaProps
	var props []string
	if err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			key = v.Str()
		case 2:
			return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
				switch num {
				case 1:
					schema = &JSONSchemaProps{}
					return d.schema(v.Bytes, schema)
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

func encodeExternalDocs(e *pbEncoder, s *JSONSchemaProps) {
	if d := s.ExternalDocs; d != nil {
		e.msg(35, func(e *pbEncoder) {
			e.Str(1, d.Description)
			e.Str(2, d.URL)
		})
	}
}

func decodeExternalDocs(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	d := &ExternalDocumentation{}
	s.ExternalDocs = d
	return pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
		switch num {
		case 1:
			d.Description = v.Str()
		case 2:
			d.URL = v.Str()
		}
		return nil
	})
}

func encodeValidations(e *pbEncoder, s *JSONSchemaProps) {
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

func decodeValidation(_ *schemaDecoder, s *JSONSchemaProps, v pbwire.Field) error {
	var r ValidationRule
	err := pbwire.EachField(v.Bytes, func(num protowire.Number, v pbwire.Field) error {
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
	return err
}

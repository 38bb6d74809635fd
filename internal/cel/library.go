package cel

import (
	"fmt"
	"math"
	"net/url"
	"reflect"
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/api/resource"
)

// kubernetesLists is Kubernetes' list library: isSorted, sum, min, max, indexOf, lastIndexOf.
func kubernetesLists() cel.EnvOption {
	t := cel.TypeParamType("T")
	listT := cel.ListType(t)
	return cel.Lib(&simpleLib{opts: []cel.EnvOption{
		cel.Function("isSorted", cel.MemberOverload("list_isSorted", []*cel.Type{listT}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			items, err := listItems(v)
			if err != nil {
				return types.NewErr("%s", err)
			}
			for i := 1; i < len(items); i++ {
				c, err := compare(items[i-1], items[i])
				if err != nil {
					return types.NewErr("%s", err)
				}
				if c > 0 {
					return types.False
				}
			}
			return types.True
		}))),
		cel.Function("sum", cel.MemberOverload("list_sum", []*cel.Type{listT}, t, cel.UnaryBinding(func(v ref.Val) ref.Val {
			items, err := listItems(v)
			if err != nil {
				return types.NewErr("%s", err)
			}
			var acc ref.Val = types.Int(0)
			for i, e := range items {
				if i == 0 {
					acc = e
					continue
				}
				adder, ok := acc.(traits.Adder)
				if !ok {
					return types.NewErr("no such overload: sum")
				}
				acc = adder.Add(e)
			}
			return acc
		}))),
		cel.Function("min", cel.MemberOverload("list_min", []*cel.Type{listT}, t, cel.UnaryBinding(func(v ref.Val) ref.Val { return extreme(v, -1) }))),
		cel.Function("max", cel.MemberOverload("list_max", []*cel.Type{listT}, t, cel.UnaryBinding(func(v ref.Val) ref.Val { return extreme(v, 1) }))),
		cel.Function("indexOf", cel.MemberOverload("list_indexOf", []*cel.Type{listT, t}, cel.IntType, cel.BinaryBinding(func(l, x ref.Val) ref.Val {
			return indexOf(l, x, false)
		}))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_lastIndexOf", []*cel.Type{listT, t}, cel.IntType, cel.BinaryBinding(func(l, x ref.Val) ref.Val {
			return indexOf(l, x, true)
		}))),
	}})
}

// simpleLib adapts a list of options to cel.Library.
type simpleLib struct{ opts []cel.EnvOption }

func (l *simpleLib) CompileOptions() []cel.EnvOption     { return l.opts }
func (l *simpleLib) ProgramOptions() []cel.ProgramOption { return nil }

func listItems(v ref.Val) ([]ref.Val, error) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("no such overload")
	}
	n := int(l.Size().(types.Int))
	out := make([]ref.Val, n)
	for i := 0; i < n; i++ {
		out[i] = l.Get(types.Int(i))
	}
	return out, nil
}

func compare(a, b ref.Val) (int, error) {
	c, ok := a.(traits.Comparer)
	if !ok {
		return 0, fmt.Errorf("no such overload: %s is not comparable", a.Type().TypeName())
	}
	r := c.Compare(b)
	i, ok := r.(types.Int)
	if !ok {
		return 0, fmt.Errorf("cannot compare %s and %s", a.Type().TypeName(), b.Type().TypeName())
	}
	return int(i), nil
}

func extreme(v ref.Val, sign int) ref.Val {
	items, err := listItems(v)
	if err != nil {
		return types.NewErr("%s", err)
	}
	if len(items) == 0 {
		if sign < 0 {
			return types.NewErr("min called on empty list")
		}
		return types.NewErr("max called on empty list")
	}
	best := items[0]
	for _, e := range items[1:] {
		c, err := compare(e, best)
		if err != nil {
			return types.NewErr("%s", err)
		}
		if c*sign > 0 {
			best = e
		}
	}
	return best
}

func indexOf(l, x ref.Val, last bool) ref.Val {
	items, err := listItems(l)
	if err != nil {
		return types.NewErr("%s", err)
	}
	found := -1
	for i, e := range items {
		if e.Equal(x) == types.True {
			found = i
			if !last {
				break
			}
		}
	}
	return types.Int(found)
}

// kubernetesRegex is Kubernetes' regex library: string.find(re) and string.findAll(re[, n]).
func kubernetesRegex() cel.EnvOption {
	find := func(s, re ref.Val, n int) ref.Val {
		r, err := regexp.Compile(string(re.(types.String)))
		if err != nil {
			return types.NewErr("%s", err)
		}
		if n == 1 {
			return types.String(r.FindString(string(s.(types.String))))
		}
		return types.NewStringList(types.DefaultTypeAdapter, r.FindAllString(string(s.(types.String)), n))
	}
	return cel.Lib(&simpleLib{opts: []cel.EnvOption{
		cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
			cel.BinaryBinding(func(s, re ref.Val) ref.Val { return find(s, re, 1) }))),
		cel.Function("findAll",
			cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
				cel.BinaryBinding(func(s, re ref.Val) ref.Val { return find(s, re, -1) })),
			cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType}, cel.ListType(cel.StringType),
				cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					n := int(args[2].(types.Int))
					if n == 0 {
						return types.NewStringList(types.DefaultTypeAdapter, []string{})
					}
					return find(args[0], args[1], n)
				}))),
	}})
}

// quantityType is Kubernetes' opaque Quantity type.
var quantityType = cel.OpaqueType("kubernetes.Quantity")

// quantityVal is a resource.Quantity as a CEL value.
type quantityVal struct{ q resource.Quantity }

func (v quantityVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(v.q).AssignableTo(t) {
		return v.q, nil
	}
	if reflect.TypeOf(&v.q).AssignableTo(t) {
		return &v.q, nil
	}
	return nil, fmt.Errorf("type conversion error from 'Quantity' to '%v'", t)
}

func (v quantityVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case quantityType:
		return v
	case types.TypeType:
		return quantityType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", quantityType, t)
}

func (v quantityVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(quantityVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.q.Equal(o.q))
}

func (v quantityVal) Type() ref.Type { return quantityType }
func (v quantityVal) Value() any     { return v.q }

// kubernetesQuantity is Kubernetes' quantity library.
func kubernetesQuantity() cel.EnvOption {
	q := quantityType
	asQ := func(v ref.Val) resource.Quantity { return v.(quantityVal).q }
	arith := func(a, b ref.Val, sub bool) ref.Val {
		x := asQ(a).DeepCopy()
		var y resource.Quantity
		switch t := b.(type) {
		case quantityVal:
			y = t.q
		case types.Int:
			y = *resource.NewQuantity(int64(t), resource.DecimalSI)
		default:
			return types.MaybeNoSuchOverloadErr(b)
		}
		if sub {
			x.Sub(y)
		} else {
			x.Add(y)
		}
		return quantityVal{q: x}
	}
	return cel.Lib(&simpleLib{opts: []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, q, cel.UnaryBinding(func(s ref.Val) ref.Val {
			parsed, err := resource.ParseQuantity(string(s.(types.String)))
			if err != nil {
				return types.NewErr("%s", err)
			}
			return quantityVal{q: parsed}
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(s ref.Val) ref.Val {
			_, err := resource.ParseQuantity(string(s.(types.String)))
			return types.Bool(err == nil)
		}))),
		cel.Function("sign", cel.MemberOverload("quantity_sign", []*cel.Type{q}, cel.IntType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x := asQ(v)
			return types.Int(x.Sign())
		}))),
		cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{q}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x := asQ(v)
			_, ok := x.AsInt64()
			return types.Bool(ok)
		}))),
		cel.Function("asInteger", cel.MemberOverload("quantity_get_integer", []*cel.Type{q}, cel.IntType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x := asQ(v)
			i, ok := x.AsInt64()
			if !ok {
				return types.NewErr("cannot convert value to integer")
			}
			return types.Int(i)
		}))),
		cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{q}, cel.DoubleType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			x := asQ(v)
			f := x.AsApproximateFloat64()
			if math.IsInf(f, 0) {
				return types.NewErr("value out of range")
			}
			return types.Double(f)
		}))),
		cel.Function("isLessThan", cel.MemberOverload("quantity_less", []*cel.Type{q, q}, cel.BoolType, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			x := asQ(a)
			return types.Bool(x.Cmp(asQ(b)) < 0)
		}))),
		cel.Function("isGreaterThan", cel.MemberOverload("quantity_greater", []*cel.Type{q, q}, cel.BoolType, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			x := asQ(a)
			return types.Bool(x.Cmp(asQ(b)) > 0)
		}))),
		cel.Function("compareTo", cel.MemberOverload("quantity_compare_to", []*cel.Type{q, q}, cel.IntType, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			x := asQ(a)
			return types.Int(x.Cmp(asQ(b)))
		}))),
		cel.Function("add",
			cel.MemberOverload("quantity_add", []*cel.Type{q, q}, q, cel.BinaryBinding(func(a, b ref.Val) ref.Val { return arith(a, b, false) })),
			cel.MemberOverload("quantity_add_int", []*cel.Type{q, cel.IntType}, q, cel.BinaryBinding(func(a, b ref.Val) ref.Val { return arith(a, b, false) }))),
		cel.Function("sub",
			cel.MemberOverload("quantity_sub", []*cel.Type{q, q}, q, cel.BinaryBinding(func(a, b ref.Val) ref.Val { return arith(a, b, true) })),
			cel.MemberOverload("quantity_sub_int", []*cel.Type{q, cel.IntType}, q, cel.BinaryBinding(func(a, b ref.Val) ref.Val { return arith(a, b, true) }))),
	}})
}

// urlType is Kubernetes' opaque URL type.
var urlType = cel.OpaqueType("kubernetes.URL")

type urlVal struct{ u *url.URL }

func (v urlVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(v.u).AssignableTo(t) {
		return v.u, nil
	}
	return nil, fmt.Errorf("type conversion error from 'URL' to '%v'", t)
}

func (v urlVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case urlType:
		return v
	case types.TypeType:
		return urlType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", urlType, t)
}

func (v urlVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(urlVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.u.String() == o.u.String())
}

func (v urlVal) Type() ref.Type { return urlType }
func (v urlVal) Value() any     { return v.u }

// kubernetesURL is Kubernetes' URL library: url() accepts an absolute URI or an absolute path.
func kubernetesURL() cel.EnvOption {
	get := func(name string, f func(u *url.URL) ref.Val, out *cel.Type) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("url_"+name, []*cel.Type{urlType}, out, cel.UnaryBinding(func(v ref.Val) ref.Val {
			return f(v.(urlVal).u)
		})))
	}
	return cel.Lib(&simpleLib{opts: []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, urlType, cel.UnaryBinding(func(s ref.Val) ref.Val {
			u, err := url.ParseRequestURI(string(s.(types.String)))
			if err != nil {
				return types.NewErr("URL parse error during conversion from string: %v", err)
			}
			return urlVal{u: u}
		}))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(s ref.Val) ref.Val {
			_, err := url.ParseRequestURI(string(s.(types.String)))
			return types.Bool(err == nil)
		}))),
		get("getScheme", func(u *url.URL) ref.Val { return types.String(u.Scheme) }, cel.StringType),
		get("getHost", func(u *url.URL) ref.Val { return types.String(u.Host) }, cel.StringType),
		get("getHostname", func(u *url.URL) ref.Val { return types.String(u.Hostname()) }, cel.StringType),
		get("getPort", func(u *url.URL) ref.Val { return types.String(u.Port()) }, cel.StringType),
		get("getEscapedPath", func(u *url.URL) ref.Val { return types.String(u.EscapedPath()) }, cel.StringType),
		get("getQuery", func(u *url.URL) ref.Val {
			q := map[string][]string(u.Query())
			return types.DefaultTypeAdapter.NativeToValue(q)
		}, cel.MapType(cel.StringType, cel.ListType(cel.StringType))),
	}})
}

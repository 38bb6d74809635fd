package cel

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/skiff-sh/skiff/internal/request"
)

// Kubernetes' authorizer library for admission expressions (ValidatingAdmissionPolicy, webhook
// matchConditions): `authorizer` asks the API server's authorizer whether the request's user may
// do something else, `authorizer.requestResource` is the request's own resource:
//
//	authorizer.group('apps').resource('deployments').namespace('ns').check('update').allowed()
//	authorizer.path('/healthz').check('get').reason()
//	authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()
//	authorizer.requestResource.subresource('status').check('patch').errored()
var (
	authorizerType    = cel.OpaqueType("kubernetes.authorization.Authorizer")
	pathCheckType     = cel.OpaqueType("kubernetes.authorization.PathCheck")
	groupCheckType    = cel.OpaqueType("kubernetes.authorization.GroupCheck")
	resourceCheckType = cel.OpaqueType("kubernetes.authorization.ResourceCheck")
	decisionType      = cel.OpaqueType("kubernetes.authorization.Decision")
)

// VarRequestResource is the request's resource as a ResourceCheck.
const VarRequestResource = "authorizer.requestResource"

// Authorization is who asks and whom: the request's context and user, and the API server's
// authorizer. NewAuthorizer and RequestResource make the variables of it.
type Authorization struct {
	Ctx        context.Context
	Authorizer request.Authorizer
	User       *request.UserInfo
}

// authzObj is every value of the library: an Authorizer (user only), a PathCheck (path), a
// GroupCheck (group), a ResourceCheck (group, resource and the rest) or a Decision, by typ.
type authzObj struct {
	typ   *types.Type
	authz Authorization
	path  string
	attrs request.RequestInfo
	// A Decision's.
	allowed bool
	reason  string
	err     error
}

func (o *authzObj) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.typ, t)
}

func (o *authzObj) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case o.typ:
		return o
	case types.TypeType:
		return o.typ
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.typ, t)
}

func (o *authzObj) Equal(other ref.Val) ref.Val { return types.Bool(o == other) }
func (o *authzObj) Type() ref.Type              { return o.typ }
func (o *authzObj) Value() any                  { return o }

// NewAuthorizer is the `authorizer` variable for a.
func NewAuthorizer(a Authorization) ref.Val { return &authzObj{typ: authorizerType, authz: a} }

// RequestResource is the `authorizer.requestResource` variable: a ResourceCheck of the request's
// group, resource, subresource, namespace and name, as a asks.
func RequestResource(a Authorization, group, resource, subresource, namespace, name string) ref.Val {
	return &authzObj{typ: resourceCheckType, authz: a, attrs: request.RequestInfo{
		IsResourceRequest: true, APIGroup: group, Resource: resource, Subresource: subresource, Namespace: namespace, Name: name,
	}}
}

// serviceAccountUser is the user a service account's tokens authenticate as.
func serviceAccountUser(namespace, name string) *request.UserInfo {
	return &request.UserInfo{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// check asks the authorizer, the decision as a value.
func (o *authzObj) check(info request.RequestInfo) ref.Val {
	d := &authzObj{typ: decisionType}
	switch {
	case o.authz.Authorizer == nil:
		d.err = fmt.Errorf("no authorizer")
	case o.authz.User == nil:
		d.err = fmt.Errorf("no user to authorize")
	default:
		ctx := o.authz.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		d.allowed, d.reason = o.authz.Authorizer.Authorize(ctx, o.authz.User, &info)
	}
	return d
}

// kubernetesAuthz declares the library's types, variables and functions.
func kubernetesAuthz() cel.EnvOption {
	str := func(v ref.Val) string { return string(v.(types.String)) }
	obj := func(v ref.Val) *authzObj { return v.(*authzObj) }
	// with returns a copy of a ResourceCheck with one attribute set.
	with := func(name string, set func(*request.RequestInfo, string)) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("resourcecheck_"+name, []*cel.Type{resourceCheckType, cel.StringType}, resourceCheckType,
			cel.BinaryBinding(func(rc, v ref.Val) ref.Val {
				next := *obj(rc)
				set(&next.attrs, str(v))
				return &next
			})))
	}
	decision := func(name string, out *cel.Type, f func(*authzObj) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload("decision_"+name, []*cel.Type{decisionType}, out, cel.UnaryBinding(func(d ref.Val) ref.Val {
			return f(obj(d))
		})))
	}
	return cel.Lib(&simpleLib{opts: []cel.EnvOption{
		cel.Variable(VarAuthorizer, authorizerType),
		cel.Variable(VarRequestResource, resourceCheckType),
		cel.Function("path", cel.MemberOverload("authorizer_path", []*cel.Type{authorizerType, cel.StringType}, pathCheckType,
			cel.BinaryBinding(func(a, p ref.Val) ref.Val {
				return &authzObj{typ: pathCheckType, authz: obj(a).authz, path: str(p)}
			}))),
		cel.Function("group", cel.MemberOverload("authorizer_group", []*cel.Type{authorizerType, cel.StringType}, groupCheckType,
			cel.BinaryBinding(func(a, g ref.Val) ref.Val {
				return &authzObj{typ: groupCheckType, authz: obj(a).authz, attrs: request.RequestInfo{IsResourceRequest: true, APIGroup: str(g)}}
			}))),
		cel.Function("serviceAccount", cel.MemberOverload("authorizer_serviceaccount", []*cel.Type{authorizerType, cel.StringType, cel.StringType}, authorizerType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				a := obj(args[0]).authz
				a.User = serviceAccountUser(str(args[1]), str(args[2]))
				return &authzObj{typ: authorizerType, authz: a}
			}))),
		cel.Function("resource", cel.MemberOverload("groupcheck_resource", []*cel.Type{groupCheckType, cel.StringType}, resourceCheckType,
			cel.BinaryBinding(func(g, r ref.Val) ref.Val {
				next := *obj(g)
				next.typ = resourceCheckType
				next.attrs.Resource = str(r)
				return &next
			}))),
		with("subresource", func(i *request.RequestInfo, v string) { i.Subresource = v }),
		with("namespace", func(i *request.RequestInfo, v string) { i.Namespace = v }),
		with("name", func(i *request.RequestInfo, v string) { i.Name = v }),
		cel.Function("check", cel.MemberOverload("resourcecheck_check", []*cel.Type{resourceCheckType, cel.StringType}, decisionType,
			cel.BinaryBinding(func(rc, verb ref.Val) ref.Val {
				info := obj(rc).attrs
				info.Verb = str(verb)
				return obj(rc).check(info)
			})),
			cel.MemberOverload("pathcheck_check", []*cel.Type{pathCheckType, cel.StringType}, decisionType,
				cel.BinaryBinding(func(pc, verb ref.Val) ref.Val {
					return obj(pc).check(request.RequestInfo{Path: obj(pc).path, Verb: str(verb)})
				}))),
		decision("allowed", cel.BoolType, func(d *authzObj) ref.Val { return types.Bool(d.allowed) }),
		decision("reason", cel.StringType, func(d *authzObj) ref.Val { return types.String(d.reason) }),
		decision("errored", cel.BoolType, func(d *authzObj) ref.Val { return types.Bool(d.err != nil) }),
		decision("error", cel.StringType, func(d *authzObj) ref.Val {
			if d.err == nil {
				return types.String("")
			}
			return types.String(d.err.Error())
		}),
	}})
}

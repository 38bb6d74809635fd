package cel

import (
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// stringTraversalCostFactor is what Kubernetes charges per character a function reads: a tenth.
const stringTraversalCostFactor = 0.1

// CallCosts prices the calls of the Kubernetes libraries that cel-go does not price itself, both
// before a program runs (checker.CostEstimator) and while it runs (cel-go's ActualCostEstimator),
// with Kubernetes' figures: a list function reads each element once (and each character of a
// string element at a tenth), lowerAscii, upperAscii, substring and trim read their string once,
// split reads it and builds the result. These figures decide which CRD rules are accepted, so they
// follow kube-apiserver's and must not drift. Other calls get cel-go's own price.
type CallCosts struct {
	// Size bounds a value the expression reads (a variable's field), when the expression alone
	// does not say; nil leaves such values unbounded.
	Size func(checker.AstNode) *checker.SizeEstimate
}

var (
	_ checker.CostEstimator = CallCosts{}
)

// EstimateSize leaves sizes to Size.
func (c CallCosts) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	if c.Size == nil {
		return nil
	}
	return c.Size(node)
}

// sizeOf is the size bound of node: from the expression, from Size, else unbounded.
func (c CallCosts) sizeOf(node checker.AstNode) checker.SizeEstimate {
	if sz := node.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := c.EstimateSize(node); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// authzCheckCost is the fixed price of an authorizer check, Kubernetes': a call to the API
// server's authorizer is dear, and at 350,000 two fit the per-expression limit of 1,000,000.
const authzCheckCost = 350000

// EstimateCallCost is the static price of a library call, nil where cel-go's applies.
func (c CallCosts) EstimateCallCost(function, _ string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		return nil
	}
	switch function {
	case "check":
		// An authorizer check (authz.go), priced as Kubernetes does: two fit an expression.
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: authzCheckCost, Max: authzCheckCost}}
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		elem := elementNode(*target)
		if elem == nil { // indexOf on a string
			return &checker.CallEstimate{CostEstimate: c.sizeOf(*target).MultiplyByCostFactor(stringTraversalCostFactor)}
		}
		perElement := checker.CostEstimate{Min: 1, Max: 1}
		if k := elem.Type().Kind(); k == types.StringKind || k == types.BytesKind {
			perElement = perElement.Add(c.sizeOf(elem).MultiplyByCostFactor(stringTraversalCostFactor))
		}
		return &checker.CallEstimate{CostEstimate: c.sizeOf(*target).MultiplyByCost(perElement)}
	case "lowerAscii", "upperAscii", "substring", "trim":
		sz := c.sizeOf(*target)
		return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(stringTraversalCostFactor), ResultSize: &sz}
	case "split":
		sz := c.sizeOf(*target)
		// At worst (an empty separator) every character is an element, unless a limit is given.
		most := sz.Max
		if len(args) > 1 {
			if lit := args[1].Expr(); lit.Kind() == ast.LiteralKind {
				if n, ok := lit.AsLiteral().Value().(int64); ok {
					most = uint64(n)
				}
			}
		}
		return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * stringTraversalCostFactor), ResultSize: &checker.SizeEstimate{Min: 0, Max: most}}
	}
	return nil
}

// CallCost is the price of a library call as it ran, nil where cel-go's applies.
func (CallCosts) CallCost(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
	if len(args) == 0 {
		return nil
	}
	var cost uint64
	switch function {
	case "check":
		cost = authzCheckCost
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		cost = traversalCost(args[0])
	case "lowerAscii", "upperAscii", "substring", "trim":
		cost = uint64(math.Ceil(float64(actualSize(args[0])) * stringTraversalCostFactor))
	case "split":
		cost = uint64(math.Ceil(float64(actualSize(args[0])) * 2 * stringTraversalCostFactor))
	default:
		return nil
	}
	return &cost
}

// elementNode is the node of a list's elements (its path one @items deeper, so Size finds the
// schema's maxLength), nil when node is no list.
func elementNode(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if list.Type().Kind() != types.ListKind || len(params) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		path = append(append([]string{}, p...), "@items")
	}
	return itemsNode{path: path, t: params[0]}
}

// itemsNode is a list's element as the estimator sees it: a type and maybe a path, no expression.
type itemsNode struct {
	path []string
	t    *types.Type
}

func (n itemsNode) Path() []string                      { return n.path }
func (n itemsNode) Type() *types.Type                   { return n.t }
func (n itemsNode) Expr() ast.Expr                      { return nil }
func (n itemsNode) ComputedSize() *checker.SizeEstimate { return nil }

func actualSize(v ref.Val) uint64 {
	if sz, ok := v.(traits.Sizer); ok {
		if n, ok := sz.Size().(types.Int); ok && n >= 0 {
			return uint64(n)
		}
	}
	return 1
}

// traversalCost is the cost of reading every element of v: a tenth a character, one a scalar.
func traversalCost(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(float64(len(string(t))) * stringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len([]byte(t))) * stringTraversalCostFactor)
	case traits.Lister:
		var cost uint64
		for it := t.Iterator(); it.HasNext() == types.True; {
			cost += traversalCost(it.Next())
		}
		return cost
	case traits.Mapper:
		var cost uint64
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			cost += traversalCost(k) + traversalCost(t.Get(k))
		}
		return cost
	}
	return 1
}

package heedotel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heed-go/heed"
)

// maxCachedSets bounds the attribute sets an Observer keeps. Past it,
// sets are built anew for each measurement: slower, never wrong.
const maxCachedSets = 4096

// setKey is everything a measurement's attributes are made of.
type setKey struct {
	metric string
	route  string
	method string
	host   string
	class  heed.Class
	reason string
	source string
	stop   string
	status int
	err    bool
}

// attrCache maps a setKey to its measurement options, so that a
// measurement whose attributes were seen before neither sorts nor
// allocates them again.
type attrCache struct {
	sets sync.Map // setKey → *measureOpts
	n    atomic.Int64
}

// measureOpts holds one attribute set as the options Add and Record take,
// in slices ready to pass as variadic arguments without allocating.
type measureOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// options returns the measurement options for k, building them with build
// on a miss.
func (c *attrCache) options(k setKey, build func() []attribute.KeyValue) *measureOpts {
	if v, ok := c.sets.Load(k); ok {
		return v.(*measureOpts)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(build()...))
	m := &measureOpts{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	if c.n.Load() < maxCachedSets {
		if _, loaded := c.sets.LoadOrStore(k, m); !loaded {
			c.n.Add(1)
		}
	}
	return m
}

package core

import "time"

// coverage tracks which input partitions of one (service, side) the live
// instances have assigned, and since when some have been unassigned.
type coverage struct {
	owners  []int32 // per partition: how many live instances report it
	total   int32   // the input topic's partitions (0: unknown)
	missing int     // partitions in [0,total) that no live instance reports
	since   time.Time
}

// setTotal grows the topic to n partitions (partition counts never shrink).
func (c *coverage) setTotal(n int32) {
	if n <= c.total {
		return
	}
	for int32(len(c.owners)) < n {
		c.owners = append(c.owners, 0)
	}
	for p := c.total; p < n; p++ {
		if c.owners[p] == 0 {
			c.missing++
		}
	}
	c.total = n
}

// add counts (delta=+1) or uncounts (delta=-1) one instance's partitions.
func (c *coverage) add(parts []int32, delta int32) {
	for _, p := range parts {
		if p < 0 {
			continue
		}
		for int32(len(c.owners)) <= p {
			c.owners = append(c.owners, 0)
		}
		before := c.owners[p]
		c.owners[p] += delta
		if p >= c.total {
			continue
		}
		switch {
		case before == 0 && c.owners[p] > 0:
			c.missing--
		case before > 0 && c.owners[p] == 0:
			c.missing++
		}
	}
}

// settle records at when the partitions became uncovered, or clears it.
func (c *coverage) settle(at time.Time) {
	switch {
	case c.missing == 0 || c.total == 0:
		c.since = time.Time{}
	case c.since.IsZero():
		c.since = at
	}
}

// uncovered lists up to limit unassigned partitions.
func (c *coverage) uncovered(limit int) []int32 {
	var out []int32
	for p := int32(0); p < c.total && len(out) < limit; p++ {
		if c.owners[p] == 0 {
			out = append(out, p)
		}
	}
	return out
}

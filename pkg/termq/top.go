package termq

// Top keeps the k best of the items offered to it, by an order given when
// it is reset: a min-heap whose root is the worst item kept, which a better
// one replaces. Until it is full it holds the items as they came, so that
// fewer than k items are never ordered but once, by whoever reads them.
// Its zero value keeps nothing until Reset. It is not safe for concurrent
// use.
type Top[T any] struct {
	items []T
	k     int
	less  func(a, b T) bool
	// moved, when set, is told each item's index when it takes one.
	moved func(x T, i int)
}

// Reset empties t, keeping its room, to keep the k best items (at least
// one) by less, which reports whether a ranks below b.
func (t *Top[T]) Reset(k int, less func(a, b T) bool) {
	clear(t.items)
	t.items = t.items[:0]
	t.k, t.less = max(k, 1), less
}

// Len is the number of items kept.
func (t *Top[T]) Len() int { return len(t.items) }

// Items are the items kept, in no particular order. The slice is t's: it
// changes with the next Offer, Fix or Remove.
func (t *Top[T]) Items() []T { return t.items }

// Offer keeps x while there is room, or in place of the worst item kept
// when x ranks above it. It returns the item that left or was refused (out
// true), so that a caller can account for what the bound cut off.
func (t *Top[T]) Offer(x T) (left T, out bool) {
	if len(t.items) < t.k {
		t.items = append(t.items, x)
		t.tell(len(t.items) - 1)
		if len(t.items) == t.k {
			for i := t.k/2 - 1; i >= 0; i-- {
				t.down(i)
			}
		}
		return left, false
	}
	if !t.less(t.items[0], x) {
		return x, true
	}
	left = t.items[0]
	t.items[0] = x
	t.tell(0)
	t.down(0)
	return left, true
}

// Fix restores the order after the item at index i changed rank.
func (t *Top[T]) Fix(i int) {
	if len(t.items) < t.k {
		return // not ordered until full
	}
	if !t.up(i) {
		t.down(i)
	}
}

// Remove takes out the item at index i and returns it.
func (t *Top[T]) Remove(i int) T {
	x := t.items[i]
	last := len(t.items) - 1
	if i != last {
		t.items[i] = t.items[last]
		t.tell(i)
	}
	var zero T
	t.items[last] = zero
	t.items = t.items[:last] // no longer full: no order to keep
	return x
}

func (t *Top[T]) tell(i int) {
	if t.moved != nil {
		t.moved(t.items[i], i)
	}
}

// down moves the item at i down the heap to its place.
func (t *Top[T]) down(i int) {
	h := t.items
	for {
		l, m := 2*i+1, i
		if l < len(h) && t.less(h[l], h[m]) {
			m = l
		}
		if r := l + 1; r < len(h) && t.less(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		t.tell(i)
		t.tell(m)
		i = m
	}
}

// up moves the item at i up the heap to its place; it reports whether it
// moved.
func (t *Top[T]) up(i int) bool {
	h := t.items
	start := i
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		t.tell(i)
		t.tell(p)
		i = p
	}
	return i != start
}

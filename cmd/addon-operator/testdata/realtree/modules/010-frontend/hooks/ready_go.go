// Go sources under hooks/ are compiled into the original's image; in a
// git tree they are not hooks.
package hooks

#!/bin/sh
echo "cannot configure" >&2
exit 2

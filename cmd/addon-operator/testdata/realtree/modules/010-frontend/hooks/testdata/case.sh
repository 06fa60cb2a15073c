#!/bin/sh
echo not a hook

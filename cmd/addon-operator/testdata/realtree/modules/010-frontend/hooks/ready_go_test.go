package hooks

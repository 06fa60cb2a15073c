echo shared

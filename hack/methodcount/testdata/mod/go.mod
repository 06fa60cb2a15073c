module example.com/mod

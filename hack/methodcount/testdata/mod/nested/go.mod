module example.com/nested

{
  "targets": [
    {
      "target_name": "sha256",
      "sources": ["sha256.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}

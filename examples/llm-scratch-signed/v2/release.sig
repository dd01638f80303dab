{
  "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
  "verificationMaterial": {
    "publicKey": {
      "hint": "77fbfe8e13a8261932da928826c921d9a299477326af2a5f0c84c9c8ea3f2a33"
    },
    "tlogEntries": []
  },
  "dsseEnvelope": {
    "payload": "eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJzdWJqZWN0IjpbeyJuYW1lIjoibGxtLXNjcmF0Y2hAdjIiLCJkaWdlc3QiOnsic2hhMjU2IjoiZGE1M2EyZjBiMTZiMGI0MjJmM2Q5MmNmNjg0YTVjZWVlN2FmZWIzMzM1MzI2NmVmOTY5NDMyNWI2NjcwNzhmZCJ9fV0sInByZWRpY2F0ZVR5cGUiOiJodHRwczovL2J1bmRsZWdhdGUuZGV2L3JlbGVhc2UvdjEiLCJwcmVkaWNhdGUiOnsibmFtZSI6ImxsbS1zY3JhdGNoIiwibmFtZXNwYWNlIjoiYWktbGFiIiwidmVyc2lvbiI6InYyIiwicmVsZWFzZURpZ2VzdCI6InNoYTI1NjpkYTUzYTJmMGIxNmIwYjQyMmYzZDkyY2Y2ODRhNWNlZWU3YWZlYjMzMzUzMjY2ZWY5Njk0MzI1YjY2NzA3OGZkIiwic3RvcmFnZVVyaSI6ImZpbGU6Li4vLi4vc3RvcmUvbGxtLXNjcmF0Y2gvdjIvIiwiaW1hZ2UiOiJyZWdpc3RyeS5leGFtcGxlLmNvbS9haS1sYWIvbGxtLXNlcnZlQHNoYTI1Njo3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjN2M3YzdjIiwiYXJ0aWZhY3RzIjo1fX0=",
    "payloadType": "application/vnd.in-toto+json",
    "signatures": [
      {
        "sig": "MEUCICab/vfq8DCCV0ivqhiYI82roocniTKx/Evt3VLSkZ8SAiEAz95AwosKvPJn4x7TBZ1QqiasRoeGp8nl8BSmRanjkwA=",
        "keyid": ""
      }
    ]
  }
}
#!/bin/bash
LIMIT=10
refill_bucket() {
  local n=$1
  echo "$n"
}
function take_token {
  refill_bucket 3
}
take_token

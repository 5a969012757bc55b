local Bucket = {}
Bucket.__index = Bucket
LIMIT = 10
function Bucket.new(capacity)
  return setmetatable({tokens = capacity}, Bucket)
end
function Bucket:take(n)
  return refill(n) > 0
end
local function refill(n)
  return n
end
function make_bucket() return Bucket.new(5) end

<?php
namespace Limiter;
const LIMIT = 10;
interface BucketInterface { public function take(int $n): bool; }
trait Refills { function refill($n) { return $n; } }
class Bucket implements BucketInterface {
    public function __construct(private int $tokens) {}
    public function take(int $n): bool { return $this->refill($n) > 0; }
}
enum Mode { case Fast; case Slow; }
function make_bucket(): Bucket { return new Bucket(5); }

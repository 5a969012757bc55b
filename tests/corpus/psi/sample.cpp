#include <vector>
namespace limiter {
class Bucket {
 public:
  Bucket(int capacity);
  bool take(int n);
 private:
  int tokens_;
};
bool Bucket::take(int n) { return refill(n) > 0; }
int refill(int n) { return n; }
struct Point { int x; };
enum class Mode { Fast, Slow };
}

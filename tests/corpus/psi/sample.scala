package limiter
trait Taker { def take(n: Int): Boolean }
class Bucket(var tokens: Int) extends Taker {
  def take(n: Int): Boolean = Limits.refill(n) > 0
}
object Limits {
  val Limit = 10
  def refill(n: Int): Int = n
}
case class Point(x: Int)
type Count = Int

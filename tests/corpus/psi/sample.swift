import Foundation
let limit = 10
protocol Taker { func take(_ n: Int) -> Bool }
class Bucket: Taker {
    var tokens: Int
    init(capacity: Int) { tokens = capacity }
    func take(_ n: Int) -> Bool { return refill(n) > 0 }
}
struct Point { var x: Int }
enum Mode { case fast, slow }
extension Bucket { func drain() {} }
func refill(_ n: Int) -> Int { return n }
typealias Count = Int

package limiter

const val LIMIT = 10

interface Taker {
    fun take(n: Int): Boolean
}

class Bucket(private var tokens: Int) : Taker {
    override fun take(n: Int): Boolean = refill(n) > 0

    companion object {
        fun build() = Bucket(5)
    }
}

object Registry {
    val buckets = mutableListOf<Bucket>()
}

data class Point(val x: Int)

enum class Mode {
    FAST,
    SLOW
}

fun refill(n: Int): Int = n

typealias Count = Int

#include <stdio.h>
#define LIMIT 10
struct bucket { int tokens; };
typedef struct bucket bucket_t;
enum mode { FAST, SLOW };
static int capacity = 5;
int refill_bucket(struct bucket *b, int n);
int refill_bucket(struct bucket *b, int n) {
    b->tokens += n;
    return b->tokens;
}
int take_token(bucket_t *b) { return refill_bucket(b, 1); }

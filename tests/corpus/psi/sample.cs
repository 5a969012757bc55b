namespace Limiter {
  public interface IBucket { bool Take(int n); }
  public class Bucket : IBucket {
    private int tokens;
    public Bucket(int capacity) { tokens = capacity; }
    public bool Take(int n) { return Refill(n) > 0; }
    private int Refill(int n) => n;
    public int Tokens { get; set; }
  }
  public struct Point { public int X; }
  public enum Mode { Fast, Slow }
  public record Request(string Tenant);
}

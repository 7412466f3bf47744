// Worker-thread task for the scan benchmark: returns its input's length, so a run measures the pool's round
// trip (post, schedule, structured clone of the payload, answer) and nothing else.
export default function echo(req: { vector: Float32Array }): number {
  return req.vector.length;
}

import fs from 'node:fs';

// Reads an OpenAI-style SSE response body: yields each `data:` payload (parsed JSON, or the string '[DONE]').
export async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of block.split('\n')) {
        if (!line.startsWith('data: ')) continue;  // comments (": keep-alive") and other fields
        const data = line.slice(6);
        yield data === '[DONE]' ? data : JSON.parse(data);
      }
    }
  }
  if (buffer.trim() !== '') throw new Error(`stream ended inside an event: ${JSON.stringify(buffer.slice(0, 100))}`);
}

// Fetches /metrics and returns {name: value} for unlabelled-by-le samples (labels dropped).
export async function scrape(baseUrl) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9_:]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (m && !m[2].includes('le=') && !m[2].includes('finished_reason=')) out[m[1]] = Number(m[3]);
  }
  return out;
}

// Resident memory of a process in KiB (Linux).
export function rssKiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

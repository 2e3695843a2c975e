// Tells whether the client of a request still has its connection open, for handlers that do not write while they
// wait (a non-streamed completion). cpp-httplib does not hand its handlers the socket, so the socket is found once
// by its TCP addresses among the process's descriptors; the 4-tuple names one connection, and the descriptor
// stays valid while the handler runs because the handler's thread owns the connection until it returns.
#pragma once

#include <optional>
#include <string>

namespace pagoda {

// The descriptor of the connected TCP socket whose peer is remote_addr:remote_port (numeric, as httplib reports
// it) and whose local port is local_port; nullopt when there is none.
std::optional<int> find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);

// True when the peer has closed or reset the connection (end of stream, hang-up or error). Bytes the peer sent
// ahead (a pipelined request) do not count as closed. Never blocks.
bool peer_has_closed(int fd);

}  // namespace pagoda

end
local reply = read()
table.insert(reply, 1, redis.call('GET', KEYS[#KEYS]))
return reply

function love.conf(t)
    t.identity = "levels-game"
    t.window.title = "Levels (bahost)"
    t.window.width, t.window.height = 640, 360
    t.modules.audio, t.modules.sound, t.modules.joystick, t.modules.physics = false, false, false, false
end
